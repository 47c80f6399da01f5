//! `sqlx::migrate!` embeds the migrations at compile time but does not
//! tell cargo about them: without this, a new migration file would not
//! rebuild the crate, and a stale build would lack its tables.
fn main() {
    println!("cargo:rerun-if-changed=../schema/sqlite");
    println!("cargo:rerun-if-changed=../schema/postgres");
}
