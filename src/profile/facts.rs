//! What a profile's `match` is compared with on a present disk: its identity's fields, and
//! its model and firmware as sysfs gives them. Read once per disk (`DiskFacts`), so that
//! applying ([`super::apply`]) and choosing among overlapping entries ([`super::overlap`])
//! compare without rereading sysfs.

use super::model::Match;
use crate::device::{self, Device};
use crate::sysroot::SysRoot;

/// What a match is compared with on one present disk: the fields of its identity
/// ([`Match::from_identity`]) and its model and firmware as sysfs gives them (`device/model`;
/// `device/rev`, else `device/firmware_rev`). Read once per disk, so a profile of N entries
/// costs N comparisons per disk, not N reads of sysfs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DiskFacts {
    /// The identity's fields, with `model` filled from `device/model` when the identity has
    /// none, and `firmware` from sysfs.
    pub id: Match,
}

impl DiskFacts {
    /// The facts of `dev` under `root`.
    pub(crate) fn of(root: &SysRoot, dev: &Device) -> DiskFacts {
        let mut id = Match::from_identity(&dev.identity).unwrap_or_default();
        let attr = |rel: &str| {
            device::read_attr(&root.block_dev(&dev.name).join(rel)).filter(|s| !s.is_empty())
        };
        if id.model.is_none() {
            id.model = attr("device/model");
        }
        id.firmware = attr("device/rev").or_else(|| attr("device/firmware_rev"));
        DiskFacts { id }
    }

    /// True when every field `m` sets equals this disk's.
    pub(crate) fn matches(&self, m: &Match) -> bool {
        m.fields()
            .iter()
            .zip(self.id.fields())
            .all(|((_, want), (_, have))| want.is_none() || *want == have)
    }
}
