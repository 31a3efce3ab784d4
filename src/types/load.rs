//! contest's loads (contest 0.61, Con Kolivas, 2002–2003), by their contest names.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One of contest's background loads. `NoLoad` is the job alone; `Cacherun` the job again, warm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    /// The job alone, cold.
    NoLoad,
    /// The job again at once, warm.
    Cacherun,
    /// A ring of processes passing messages through pipes.
    ProcessLoad,
    /// Repeatedly create a tar of a tree.
    CtarLoad,
    /// Repeatedly extract a tar of a tree.
    XtarLoad,
    /// Keep writing a large file on the target filesystem.
    IoLoad,
    /// The same as io_load, in `--other-dir`.
    IoOther,
    /// Re-read a large file, cold.
    ReadLoad,
    /// Walk and stat a large tree.
    ListLoad,
    /// Repeatedly touch a large fraction of RAM.
    MemLoad,
    /// Run `dbench` if installed.
    DbenchLoad,
    /// Not contest's: two writers like io_load's, capped at 4000 KiB/s in all, as the BFQ team's
    /// S suite caps its background writers on a rotational disk (`comm_startup_lat`). The
    /// start-up judge's light background ([`crate::bench::loads`]).
    LightIoLoad,
}

impl Load {
    /// Every load, in contest's order, then the loads contest does not have.
    pub const ALL: [Load; 12] = [
        Load::NoLoad,
        Load::Cacherun,
        Load::ProcessLoad,
        Load::CtarLoad,
        Load::XtarLoad,
        Load::IoLoad,
        Load::IoOther,
        Load::ReadLoad,
        Load::ListLoad,
        Load::MemLoad,
        Load::DbenchLoad,
        Load::LightIoLoad,
    ];

    /// contest's name for the load, e.g. `io_load`.
    pub fn name(self) -> &'static str {
        match self {
            Load::NoLoad => "no_load",
            Load::Cacherun => "cacherun",
            Load::ProcessLoad => "process_load",
            Load::CtarLoad => "ctar_load",
            Load::XtarLoad => "xtar_load",
            Load::IoLoad => "io_load",
            Load::IoOther => "io_other",
            Load::ReadLoad => "read_load",
            Load::ListLoad => "list_load",
            Load::MemLoad => "mem_load",
            Load::DbenchLoad => "dbench_load",
            Load::LightIoLoad => "light_io_load",
        }
    }
}

impl fmt::Display for Load {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Load {
    type Err = String;

    /// Parses a contest load name; the error lists the valid names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Load::ALL
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Load::ALL.iter().map(|l| l.name()).collect();
                format!("unknown load '{s}' (valid: {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for l in Load::ALL {
            assert_eq!(l.name().parse::<Load>(), Ok(l));
        }
        assert!("io-load".parse::<Load>().is_err());
    }
}
