//! Fixed system paths that modules on different layers name: here, at the bottom, so none
//! imports upward to reach one.

/// Where the daemon looks for its config when `--config` is not given
/// (`crate::daemon::config` reads it; a profile export's advice names it).
pub(crate) const DAEMON_CONFIG: &str = "/etc/sweetspot/daemon.toml";
