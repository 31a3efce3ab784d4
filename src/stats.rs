//! Statistics used by bench and tune alike. Filled in by the Contest-subset issue.
