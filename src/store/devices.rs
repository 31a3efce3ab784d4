//! The `devices` table: each device seen, per kernel release.

use super::{Store, now};
use crate::Result;
use crate::device::Device;
use rusqlite::params;

impl Store {
    /// Records (or refreshes) `device` under `kernel`: its identity, current kernel name and
    /// fingerprint ([`Device::fingerprint`]). Returns the row id.
    pub(crate) fn record_device(&self, device: &Device, kernel: &str) -> Result<i64> {
        let t = now();
        let id = self.conn().query_row(
            "INSERT INTO devices (identity, kernel, name, fingerprint, first_seen, last_seen) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5) \
             ON CONFLICT (identity, kernel) DO UPDATE SET name = excluded.name, \
             fingerprint = excluded.fingerprint, last_seen = excluded.last_seen \
             RETURNING id",
            params![
                device.identity,
                kernel,
                device.name,
                device.fingerprint(),
                t
            ],
            |r| r.get(0),
        )?;
        Ok(id)
    }
}
