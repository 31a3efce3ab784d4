//! Profiles: sweet spots exported so they outlive a reboot, keyed by stable device identity,
//! never by a kernel name like `sdb` that may swap on the next boot.
//!
//! - [`model`]: the profile itself, sweetspot's own versioned TOML (docs/DESIGN.md
//!   "Profiles"): `version`, `[[device]]` entries with `match`, `kernel`, `policy`,
//!   `tuned_at`, `improvement`, `knobs` and `baseline`, and a `[host]` table for host-wide knobs.
//! - [`build`]: the profile of the sweet spots in the database (the latest per identity,
//!   kernel and policy), carrying only the knobs a sweet spot changed from its baseline.
//! - One file per output format: [`udev`] (rules, no sweetspot binary needed at boot),
//!   [`sysctl`] (`sysctl.d`, the host knobs only), [`tuned`] (a TuneD profile directory).
//!   The TOML is [`model::Profile::to_toml`].

pub mod apply;
pub mod build;
pub mod file;
pub mod model;
pub mod sysctl;
pub mod tuned;
pub mod udev;
pub mod verify;

pub use model::{DeviceEntry, Match, Profile};

#[cfg(test)]
mod tests;
