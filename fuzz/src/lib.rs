//! The fuzz targets' shared checks ([`checks`]), one function per parser.
pub mod checks;
