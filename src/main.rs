//! The thin `sweetspot` binary: everything lives in the library.

fn main() {
    std::process::exit(sweetspot::cli::main());
}
