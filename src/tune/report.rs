//! The tune's final report and JSON.
