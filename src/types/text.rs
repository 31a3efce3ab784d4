//! Free text from outside (a disk's model or serial, a policy's name, a value read back from
//! the database) checked and shown safely: what every stage that prints or writes such text
//! shares, at the bottom of the module graph so `device`, `bench` and `tune` need not import
//! `profile`'s exporters for it.

/// True for a character no generated file or one-line message can carry: a control
/// character (C0, DEL, C1: `char::is_control`) or a Unicode line or paragraph separator
/// (U+2028, U+2029), which some readers take as a line break.
pub(crate) fn is_control(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// `s` with control characters, `\` and the line separators escaped (`\n`, `\u{1b}`,
/// `\u{2028}`): safe to print in a message or a table, on one line.
pub(crate) fn shown(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2028}' | '\u{2029}' => c.escape_unicode().to_string(),
            c if c.is_control() || c == '\\' => c.escape_debug().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// `b` bytes as people read them, in IEC units with one decimal: `812.0 MiB`, `11.5 GiB`
/// (bytesize).
pub fn bytes(b: u64) -> String {
    bytesize::ByteSize::b(b).display().iec().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_puts_every_line_breaking_character_on_one_line() {
        assert_eq!(
            shown("a\nb\\c\u{1b}[0m\u{2028}"),
            "a\\nb\\\\c\\u{1b}[0m\\u{2028}"
        );
        assert!(is_control('\u{85}') && is_control('\u{2029}') && !is_control('é'));
    }
}
