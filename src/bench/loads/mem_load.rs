//! mem_load: repeatedly touch a buffer of a given size (contest sized it past RAM to force
//! swapping; here the size is a parameter, so a small board is not pushed into the OOM killer).

use super::counter::Counter;
use crate::Result;

pub(super) fn run(mib: u64, counter: &Counter) -> Result<()> {
    const PAGE: usize = 4096;
    let mut buf = vec![0u8; (mib.max(1) as usize) << 20];
    let mut round = 1u8;
    loop {
        for mib_chunk in buf.chunks_mut(1 << 20) {
            for page in mib_chunk.chunks_mut(PAGE) {
                page[0] = page[0].wrapping_add(round);
            }
            std::hint::black_box(&mut *mib_chunk);
            counter.add(1);
        }
        round = round.wrapping_add(1);
    }
}
