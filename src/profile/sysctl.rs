//! A `sysctl.d` file (`/etc/sysctl.d/99-sweetspot.conf`) with the profile's host-wide knobs,
//! read by systemd-sysctl at boot (sysctl.d(5): `key = value`, `/` or `.` separated).
//!
//! - Only keys that exist under this host's `/proc/sys` are written; the others are named in a
//!   comment and a warning (a missing key makes `sysctl --system` complain at every boot).
//! - Of an exclusive pair (`dirty_ratio`↔`dirty_bytes`, writing one zeroes the other:
//!   mm/page-writeback.c) only the non-zero member is written: writing the zero member after
//!   the other would undo it, and 0 is EINVAL for the `*_bytes` member.

use super::model::Profile;
use crate::knob::catalogue;
use crate::sysroot::SysRoot;
use crate::types::KnobValue;

/// The `sysctl.d` key of a host-wide knob: `vm.<name>` for `/proc/sys/vm/<name>`.
pub fn key(knob: &str) -> String {
    format!("vm.{knob}")
}

/// The file for `profile`, checking keys against `root`'s `/proc/sys`.
pub fn render(profile: &Profile, root: &SysRoot) -> String {
    let mut out = String::from(
        "# sweetspot host-wide sweet spots (`sweetspot profile export --format sysctl`).\n\
         # Install as /etc/sysctl.d/99-sweetspot.conf; `sysctl --system` applies it now.\n",
    );
    let Some(host) = &profile.host else {
        out.push_str("# no host-wide knob in these sweet spots\n");
        return out;
    };
    for (k, v) in &host.knobs {
        if v == &KnobValue::Int(0)
            && catalogue::exclusive_partner(k).is_some_and(|p| host.knobs.contains_key(p))
        {
            out.push_str(&format!(
                "# {} = 0 left out: writing {} already zeroes it\n",
                key(k),
                catalogue::exclusive_partner(k).unwrap_or_default()
            ));
            continue;
        }
        let file = root.proc.join("sys/vm").join(k);
        if !file.exists() {
            tracing::warn!("sysctl: {} does not exist on this host; left out", key(k));
            out.push_str(&format!(
                "# {} = {v} left out: {} does not exist on this host\n",
                key(k),
                file.display()
            ));
            continue;
        }
        out.push_str(&format!("{} = {v}\n", key(k)));
    }
    out
}
