//! A `sysctl.d` file (`/etc/sysctl.d/99-sweetspot.conf`) with the profile's host-wide knobs
//! (of the host's own sweet spot, `tune --host`, and of device tunes), read by systemd-sysctl
//! at boot (sysctl.d(5): `key = value`, `/` or `.` separated).
//!
//! Only keys that exist under this host's `/proc/sys` are written (`present`, also used for
//! TuneD's `[sysctl]`); the others are named in a comment and a warning (a missing key makes
//! `sysctl --system` complain at every boot). Of an exclusive pair only the non-zero member is
//! in a profile at all ([`super::build`], and [`super::file`] refuses both).

use super::model::Profile;
use crate::Result;
use crate::sysroot::SysRoot;

/// The `sysctl.d` key of a host-wide knob: `kernel.<name>` for a CPU-scheduler sysctl
/// (`/proc/sys/kernel/sched_*`), `vm.<name>` for `/proc/sys/vm/<name>`.
pub(crate) fn key(knob: &str) -> String {
    if crate::knob::catalogue::SCHED_SYSCTL_KNOBS.contains(&knob) {
        format!("kernel.{knob}")
    } else {
        format!("vm.{knob}")
    }
}

/// The file under `root` that knob `knob`'s sysctl key names; `None` for a debugfs knob
/// (`sched/*`, a feature flag), which is no sysctl.
fn file_of(root: &SysRoot, knob: &str) -> Option<std::path::PathBuf> {
    use crate::knob::{catalogue, features};
    if catalogue::SCHED_SYSCTL_KNOBS.contains(&knob) {
        return Some(root.kernel_sysctl().join(knob));
    }
    if catalogue::SCHED_DEBUGFS_KNOBS.contains(&knob) || features::is_feature(knob) {
        return None;
    }
    Some(root.vm().join(knob))
}

/// The profile's host knobs as `(key, value)` where `root` has them, and a note for each it
/// lacks.
pub(crate) fn present(profile: &Profile, root: &SysRoot) -> (Vec<(String, String)>, Vec<String>) {
    let (mut have, mut notes) = (Vec::new(), Vec::new());
    for (k, v) in profile.host.iter().flat_map(|h| &h.knobs) {
        let Some(file) = file_of(root, k) else {
            tracing::warn!("sysctl: {k} is a debugfs knob, not a sysctl; left out");
            notes.push(format!(
                "{k} = {v} left out: a debugfs sched/ knob, not a sysctl (set it from a boot \
                 script)"
            ));
            continue;
        };
        if file.exists() {
            have.push((key(k), v.to_string()));
        } else {
            tracing::warn!("sysctl: {} does not exist on this host; left out", key(k));
            notes.push(format!(
                "{} = {v} left out: {} does not exist on this host",
                key(k),
                file.display()
            ));
        }
    }
    (have, notes)
}

/// The file for `profile`, checking keys against `root`'s `/proc/sys`. Every line is
/// written through [`super::escape::sysctl`]. Errors (exit 2): a control character in a field
/// the file carries, a key that is not a plain sysctl name, or a value sysctl.d would not
/// read back as written, naming the field.
pub(crate) fn render(profile: &Profile, root: &SysRoot) -> Result<String> {
    use super::escape::sysctl as esc;
    if let Some(h) = &profile.host {
        super::escape::host_fields("sysctl", h)?;
    }
    let mut out = String::from(
        "# sweetspot host-wide sweet spots (`sweetspot profile export --format sysctl`).\n\
         # Install as /etc/sysctl.d/99-sweetspot.conf; `sysctl --system` applies it now.\n",
    );
    let (have, notes) = present(profile, root);
    if let Some(d) = profile.host.as_ref().and_then(super::describe_host) {
        out.push_str(&esc::comment("the host's provenance", "the host", &d)?);
    }
    if have.is_empty() && notes.is_empty() {
        out.push_str(if profile.host.as_ref().is_some_and(|h| h.is_tuned()) {
            "# keep the default: no significant improvement, nothing set\n"
        } else {
            "# no host-wide knob in these sweet spots\n"
        });
    }
    for n in notes {
        out.push_str(&esc::comment("host.knobs", "the host", &n)?);
    }
    for (k, v) in have {
        out.push_str(&esc::line("the host", &k, &v)?);
    }
    Ok(out)
}
