//! Output formats behind one trait: the contest table, JSON, CSV. Filled in by the
//! Contest-subset issue.
