//! The exported functions of `sampler.h`. Each is a panic boundary: the
//! runtime is a guest in a C program, so on a bug of ours it turns sampling
//! off and lets the program run on; it never unwinds into C.

// The exported functions must be `pub` to be exported from the staticlib,
// though no Rust crate can reach them.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::countdown::{self, Expiry};
use crate::registry::{self, CbiSchemeSites, CbiUnit};
use crate::{atoms, gobject, report, runtime, trace};

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

/// The Rust side of `cbi_sample` (defined in `tls.c`), when the calling
/// thread has no gap drawn in advance left: stores the countdown of the
/// events that follow in `*countdown`, fills `gaps[..*left]` (`*left` at
/// most `capacity`) with the next gaps, the next one to use last, and
/// returns 1 when the current event is sampled.
///
/// # Safety
/// `countdown` points to the calling thread's `cbi_countdown`, `gaps` to
/// `capacity` ints and `left` to an unsigned int, and nothing else reads
/// or writes `gaps` and `left` during the call (`tls.c` keeps signal
/// handlers out).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi__sample_slow(
    countdown: *mut i32,
    gaps: *mut i32,
    capacity: u32,
    left: *mut u32,
) -> i32 {
    if countdown.is_null() || gaps.is_null() || left.is_null() {
        return 0;
    }
    // SAFETY: per the contract, `capacity` ints that only we use now.
    let gaps = unsafe { std::slice::from_raw_parts_mut(gaps, capacity as usize) };
    // SAFETY: per the contract, valid for reads. A thread's countdown
    // starts at 0, so at its first event it holds minus the decrement of
    // the site or region that ran it out (its scale). It holds a gap of g
    // events as g - 1 (ABI 2, `tls.c`).
    let before = unsafe { countdown.read() };
    let events = i32::try_from(-i64::from(before)).unwrap_or(i32::MAX);
    let expiry = guarded(Expiry::OFF, || {
        let runtime = runtime();
        countdown::expire(gaps, &runtime.generator, runtime.seed, events)
    });
    // SAFETY: per the contract, valid for writes. `countdown` is written,
    // never referenced: instrumented code in a signal handler may
    // decrement it at any time.
    unsafe {
        countdown.write(expiry.countdown - 1);
        left.write(expiry.n_gaps as u32);
    }
    i32::from(expiry.sampled)
}

unsafe extern "C" {
    /// `tls.c`: empties the calling thread's batch of gaps drawn in
    /// advance and returns how many it held. Takes no pointer and
    /// touches only the calling thread's own thread-locals.
    #[link_name = "cbi__forget_gaps"]
    safe fn forget_gaps_c() -> u32;
}

/// Empties the calling thread's batch of gaps drawn in advance (a forked
/// child's, see `countdown::after_fork_in_child`); returns how many it
/// held.
pub(crate) fn forget_gaps() -> usize {
    forget_gaps_c() as usize
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

/// The Rust side of `cbi_traceObserve` (`tls.c`), which calls it only
/// with the calling thread's ring set (tracing on); `event` counts the
/// events the thread has sampled. The scheme pointer is only a number
/// here: compared with the registered units' tables when the trace is
/// written, never read. A `slot` not below 2^16 is not recorded.
/// Async-signal-safe.
///
/// # Safety
/// `ring` is the pointer `trace::prepare_thread` gave the calling thread
/// through `cbi__trace_set_ring`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi_traceRecord(
    ring: *const c_void,
    event: u64,
    scheme: *const CbiSchemeSites,
    site: u32,
    slot: u32,
) {
    // SAFETY: the caller's contract; rings are never freed.
    let ring = unsafe { trace::ring_from_tls(ring) };
    let Ok(slot) = u16::try_from(slot) else {
        return;
    };
    // Not `guarded`: nothing on this path can panic (the ring's index is
    // masked into its power-of-two length), and without the unwinding
    // frame the common case saves no register.
    let scheme = scheme as usize;
    trace::observe(ring, event, trace::Observed::Site { scheme, site, slot });
}

/// `cbi_traceRecord` for instrumented code that has the observed value's
/// address in hand (sampler-cc's count helper, bounds sites): a counter,
/// or the first value of a bounds row. The address is only a number here:
/// its table, site and slot are found among the registered units' values
/// when the trace is written, never read. Async-signal-safe.
///
/// # Safety
/// `ring` is the pointer `trace::prepare_thread` gave the calling thread
/// through `cbi__trace_set_ring`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cbi_traceRecordValue(
    ring: *const c_void,
    event: u64,
    value: *const c_void,
) {
    // SAFETY: the caller's contract; rings are never freed.
    let ring = unsafe { trace::ring_from_tls(ring) };
    // Not `guarded`, as `cbi_traceRecord`.
    trace::observe(ring, event, trace::Observed::Value(value as usize));
}

/// Runs at `exit`.
pub(crate) extern "C" fn at_exit() {
    guarded((), report::write_final);
}
