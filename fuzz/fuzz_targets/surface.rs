//! Fuzz target: surface (see ../src/checks.rs for what it asserts). The input is UTF-8 text;
//! other bytes are skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        sweetspot_fuzz::checks::surface(text);
    }
});
