//! The exported functions of `sampler.h`. Each is a panic boundary: the
//! runtime is a guest in a C program, so on a bug of ours it turns sampling
//! off and lets the program run on; it never unwinds into C.

// The exported functions must be `pub` to be exported from the staticlib,
// though no Rust crate can reach them.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::registry::{self, CbiUnit};
use crate::{atoms, countdown, gobject, report, runtime};

/// Set when a panic was caught: everything is off from then on.
static BROKEN: AtomicBool = AtomicBool::new(false);
/// The logical clock of timestamps.
static CLOCK: AtomicU64 = AtomicU64::new(0);

fn guarded<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    if BROKEN.load(Ordering::Relaxed) {
        return fallback;
    }
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(_) => {
            BROKEN.store(true, Ordering::Relaxed);
            fallback
        }
    }
}

/// The Rust side of `cbi_sample` (defined in `tls.c`, which passes the
/// calling thread's `cbi_countdown`).
///
/// # Safety
/// `countdown` points to the calling thread's `cbi_countdown`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi__sample_slow(countdown: *mut i32) -> i32 {
    if countdown.is_null() {
        return 0;
    }
    // SAFETY: per the contract, a valid thread-local int of this thread.
    let countdown = unsafe { &mut *countdown };
    let sampled = guarded(None, || {
        let runtime = runtime();
        Some(countdown::expire(
            countdown,
            &runtime.generator,
            runtime.seed,
        ))
    });
    match sampled {
        Some(sampled) => i32::from(sampled),
        None => {
            *countdown = i32::MAX;
            0
        }
    }
}

/// `cbi_registerUnit`.
///
/// # Safety
/// `unit` is null or points to a `struct cbi_unit` that stays valid until
/// `cbi_unregisterUnit` is called with it (or the program ends).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi_registerUnit(unit: *mut CbiUnit) {
    if unit.is_null() {
        return;
    }
    guarded((), || {
        runtime();
        // SAFETY: per the contract.
        match registry::check(unsafe { &*unit }) {
            // SAFETY: checked above; valid per the contract.
            Ok(()) => unsafe { registry::register(unit) },
            Err(problem) => crate::warn(&problem),
        }
    });
}

/// `cbi_unregisterUnit`.
///
/// # Safety
/// As for [`cbi_registerUnit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi_unregisterUnit(unit: *mut CbiUnit) {
    if unit.is_null() {
        return;
    }
    guarded((), || {
        // SAFETY: per the contract.
        if unsafe { registry::unregister(unit) } {
            // SAFETY: still valid: its destructor is running.
            report::write_unloaded_unit(unsafe { &*unit });
        }
    });
}

/// `cbi_reportNow`.
#[unsafe(no_mangle)]
pub extern "C" fn cbi_reportNow() {
    guarded((), || {
        runtime();
        report::write_interim();
    });
}

/// `cbi_nextTimestamp`.
#[unsafe(no_mangle)]
pub extern "C" fn cbi_nextTimestamp() -> u64 {
    CLOCK.fetch_add(1, Ordering::Relaxed) + 1
}

/// `cbi_gObjectUnrefClassify`.
///
/// # Safety
/// `object` is null or a live `GTypeInstance`, as for GLib's `G_IS_OBJECT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi_gObjectUnrefClassify(object: *const c_void) -> c_int {
    guarded(gobject::NOT_AN_OBJECT, || {
        // SAFETY: per the contract, which is `classify`'s.
        unsafe { gobject::classify(object) }
    })
}

/// `cbi_atomsObserve`. The address is only a number here: never read.
/// Async-signal-safe.
#[unsafe(no_mangle)]
pub extern "C" fn cbi_atomsObserve(address: *const c_void) -> c_int {
    guarded(0, || c_int::from(atoms::observe(address as usize)))
}

/// Runs at `exit`.
pub(crate) extern "C" fn at_exit() {
    guarded((), report::write_final);
}
