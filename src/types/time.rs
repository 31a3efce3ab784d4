//! Times as text: Unix seconds to and from RFC 3339 UTC (`2026-12-01T08:00:00Z`), the form
//! every JSON output, profile and status line uses. Whole seconds, `Z` only: a reader of
//! our own files needs no time-zone database.

/// Unix seconds as RFC 3339 UTC, `2026-12-01T08:00:00Z` (days to civil date: Howard
/// Hinnant's `civil_from_days`, <https://howardhinnant.github.io/date_algorithms.html>).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The Unix seconds of a time written exactly as [`rfc3339`] writes it
/// (`2026-12-01T08:00:00Z`); `None` for any other text or a date that does not exist
/// (`2026-02-30T00:00:00Z`). Civil date to days: Howard Hinnant's `days_from_civil`.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let shape = b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let secs = (era * 146_097 + doe - 719_468) * 86_400 + hh * 3600 + mm * 60 + ss;
    // Out-of-range fields (month 13, 24:00:00, February 30) come back as another text.
    (rfc3339(secs) == s).then_some(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_date() {
        // `date -u -d @0 +%FT%TZ`, `date -u -d @1764576000 +%FT%TZ`, and a leap day.
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_764_576_000), "2025-12-01T08:00:00Z");
        assert_eq!(rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
    }

    #[test]
    fn parse_rfc3339_reads_what_rfc3339_writes_and_nothing_else() {
        for secs in [0, 1_764_576_000, 951_782_400 + 3661, -86_400] {
            assert_eq!(parse_rfc3339(&rfc3339(secs)), Some(secs));
        }
        for bad in [
            "yesterday",
            "",
            "2026-12-01",
            "2026-12-01 08:00:00Z",
            "2026-12-01T08:00:00+01:00",
            "2026-12-01T08:00:00.5Z",
            "2026-13-01T08:00:00Z",
            "2026-02-29T08:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T08:60:00Z",
            "+026-12-01T08:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
