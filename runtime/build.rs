//! Compiles the one C file of the runtime: the exported thread-local
//! countdown, which stable Rust cannot define, and the common case of
//! `cbi_sample` beside it (its thread-locals are initial-exec through
//! attributes in the source, see `tls.c`).

fn main() {
    println!("cargo:rerun-if-changed=src/tls.c");
    println!("cargo:rerun-if-changed=include/sampler.h");
    cc::Build::new()
        .file("src/tls.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("sampler_tls");
}
