//! After start-up, the daemon's resident set holds the code and read-only data that ran once
//! (argument parsing, the database's migrations, the runtime's set-up): on a 9 MB binary that
//! is most of its RSS. `drop_start_up_pages` drops the resident pages of the read-only file
//! mappings (code, `r-xp`, and read-only data, `r--p`) that hold no page of their own; what the
//! loop uses again is faulted back from the page cache (a minor fault, no I/O while the file is
//! cached), so the RSS afterwards is what the loop uses.
//!
//! Only mappings whose every resident page is the file's (`Anonymous: 0 kB` in
//! `/proc/self/smaps`): dropping those pages loses nothing. A private mapping with pages of its
//! own, such as the RELRO region (written by the dynamic loader, then made read-only) or
//! `.data`, is left alone: `MADV_DONTNEED` would throw its changes away.

/// One mapping of `/proc/self/smaps` that may be dropped: `(start, end)` addresses.
fn droppable(smaps: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut cur: Option<(usize, usize)> = None;
    for line in smaps.lines() {
        let mut f = line.split_whitespace();
        let first = f.next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            // A mapping's header: address range, perms, offset, dev, inode, path.
            let perms = f.next().unwrap_or("");
            let path = f.nth(3).unwrap_or("");
            cur = ((perms == "r-xp" || perms == "r--p") && path.starts_with('/')).then_some((a, b));
        } else if first == "Anonymous:"
            && let Some(range) = cur.take()
            && f.next() == Some("0")
        {
            out.push(range);
        }
    }
    out
}

/// Drops the resident pages of this process's read-only file mappings that hold no page of
/// their own; returns how many bytes of mappings it advised. Errors are ignored (the pages
/// just stay resident).
pub(crate) fn drop_start_up_pages() -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut total = 0;
    for (a, b) in droppable(&smaps) {
        // SAFETY: [a, b) is a whole mapping of this process as the kernel lists it: private,
        // not writable, file-backed, with no anonymous (copy-on-write) page, so its pages hold
        // the file's bytes unmodified and MADV_DONTNEED only drops them from the page tables
        // (the next access faults them in again from the file, madvise(2)). Nothing in this
        // process makes such a mapping writable (the loader's RELRO is done before main).
        // Code running now (this function) is faulted back the same way.
        let r = unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_DONTNEED) };
        if r == 0 {
            total += b - a;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_file_mappings_without_pages_of_their_own() {
        let smaps = "\
55d0-55e0 r--p 00000000 fd:01 12 /usr/bin/x
Rss:                 964 kB
Anonymous:             0 kB
55e0-55f0 r-xp 00001000 fd:01 12 /usr/bin/x
Anonymous:             0 kB
55f0-5600 r--p 00002000 fd:01 12 /usr/bin/x
Anonymous:           344 kB
5600-5610 rw-p 00003000 fd:01 12 /usr/bin/x
Anonymous:             0 kB
7f00-7f10 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
";
        assert_eq!(droppable(smaps), vec![(0x55d0, 0x55e0), (0x55e0, 0x55f0)]);
    }

    #[test]
    fn pages_come_back_when_they_run_again() {
        assert!(drop_start_up_pages() > 0);
        // Still runs (its code and data faulted back in), twice.
        assert!(drop_start_up_pages() > 0);
    }
}
