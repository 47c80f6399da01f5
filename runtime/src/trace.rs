//! The flight recorder (issue 18): each thread's last `SAMPLER_TRACE`
//! sampled observations, written as the `trace` subreport
//! (`schema/report-format.md`, "The `trace` subreport") on a fatal signal
//! and in interim reports.
//!
//! - **Rings.** A thread's ring is allocated, and pushed on a process-wide
//!   lock-free list, at the thread's first event (the slow path of
//!   `cbi_sample`, where the runtime already starts the thread's stream
//!   and its alternate signal stack), never in [`observe`], which may run
//!   in a signal handler. An observation made by a thread that has no
//!   ring yet is dropped; instrumented code only observes after
//!   `cbi_sample` returned 1, so by then the ring exists. Rings are never
//!   freed: at the thread's exit (a thread-local destructor) the ring is
//!   marked exited and keeps its records; a new thread takes over the
//!   oldest exited ring once [`EXITED_POOL`] of them wait, so memory is
//!   bounded by the live threads plus that pool.
//! - **Writing a record** ([`observe`]) takes no lock and allocates
//!   nothing, and is a few stores: `cbi_traceObserve` (`tls.c`) finds the
//!   thread's ring in an initial-exec thread-local, with the number of
//!   events the thread sampled. A record names what was observed by one
//!   word, [`Observed`]: the address of the counter (or bounds row) that
//!   instrumented code updated, which is all sampler-cc's count helper
//!   has in hand, or for `cbi_traceObserve`'s callers a scheme table with
//!   a site and a slot. The first observation of a sampled event
//!   takes the event's process-wide sequence number (one `fetch_add`) and
//!   clock reading; the event's other observations (the other sites of
//!   the same region execution) reuse them, so the cost of both is paid
//!   once per sampled event, not per site. Then the record reserves an
//!   index with one instruction that a signal handler cannot split (see
//!   [`reserve`]), clears the entry's stamp, stores the fields, and stores
//!   the stamp `index + 1` with release order, a seqlock: a reader keeps
//!   an entry only if it reads the same expected stamp before and after
//!   the fields, so a torn entry (a writer interrupted by the crash, or
//!   still running on another thread) is skipped, never written half.
//! - **Writing the trace** ([`write()`]) copies one thread's valid records
//!   into a snapshot buffer allocated when tracing is enabled (the writer
//!   holds the report's `WriterGuard`, so one buffer serves), then writes
//!   the block with the allocation-free `FdWriter`: the count of a block
//!   is known before its first line, even while the thread keeps running.
//!   Records name a value or a scheme table by its address; it is mapped
//!   to the `table` line, site and slot of the registered unit that holds
//!   it (a value's row and column in its table), and a record of a unit
//!   since unloaded is left out.
//! - **The clock** ([`clock`]) is the time-stamp counter on x86-64 when
//!   the processor says it is invariant (one `rdtsc`, about a third of a
//!   `clock_gettime` from the vDSO), its frequency measured against
//!   `CLOCK_MONOTONIC` between the start of tracing and the writing of the
//!   trace; elsewhere `CLOCK_MONOTONIC` in nanoseconds.

use std::cell::Cell;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

use crate::registry;
use crate::report::FdWriter;
use crate::sys;

/// Exited rings kept before a new thread takes the oldest over.
pub(crate) const EXITED_POOL: usize = 16;

/// Records per ring; 0 while tracing is off. The first thing [`observe`]
/// reads.
static CAPACITY: AtomicU32 = AtomicU32::new(0);
/// The process-wide sequence number of the next sampled event that records.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// The most recently created ring; the rest follow `Ring::next_ring`.
static RINGS: AtomicPtr<Ring> = AtomicPtr::new(ptr::null_mut());
/// Where [`write()`] copies one thread's records; `CAPACITY` entries.
static SNAPSHOT: OnceLock<Box<[Snapshot]>> = OnceLock::new();

const LIVE: u8 = 0;
const EXITED: u8 = 1;
/// Being taken over by a new thread: skipped by the writer.
const CLAIMING: u8 = 2;

/// One record of a ring. Every field is atomic so that readers on other
/// threads race with the writer without undefined behaviour.
#[derive(Debug, Default)]
struct Entry {
    /// `index + 1` once the record at `index` is complete; 0 while written.
    stamp: AtomicU64,
    /// From [`Observed::fields`]: a value's address, or a scheme table's address
    /// with [`SCHEME_TAG`] set.
    key: AtomicU64,
    /// `site << 16 | slot` when `key` names a scheme table; left as it was
    /// for a value.
    site_slot: AtomicU64,
    sequence: AtomicU64,
    time: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Ring {
    tid: AtomicI32,
    state: AtomicU8,
    /// The sequence number when the thread exited, to find the oldest.
    exited_at: AtomicU64,
    /// Indices reserved so far (records written, or being written).
    reserved: AtomicU64,
    /// 1 + the thread's sampled-event count when `event_sequence` and
    /// `event_time` were taken; 0 before its first record.
    stamped_event: AtomicU64,
    /// The sequence number and the time of the current sampled event.
    event_sequence: AtomicU64,
    event_time: AtomicU64,
    /// The first index of the current owner: older entries belong to a
    /// thread that exited before this one took the ring over.
    base: AtomicU64,
    /// A power of two of entries, at least `SAMPLER_TRACE`: an index is
    /// masked, not divided. The trace keeps the last `SAMPLER_TRACE`.
    entries: Box<[Entry]>,
    next_ring: AtomicPtr<Ring>,
}

/// Set in [`Entry::key`] when it holds a scheme table's address (8-byte
/// aligned, as values are), not a value's.
const SCHEME_TAG: u64 = 1;

/// What one record observed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Observed {
    /// The value instrumented code updated: a counter of a scheme table,
    /// or the first value of a bounds row. Its table, site and slot are
    /// found from the address when the trace is written, so that the
    /// count helper passes on the one pointer it has.
    Value(usize),
    /// The counter `slot` of `site` in the scheme table at `scheme`
    /// (`cbi_traceObserve`). `slot` is below 2^16.
    Site { scheme: usize, site: u32, slot: u16 },
}

impl Observed {
    /// [`Entry::key`] and, for a table's site, [`Entry::site_slot`]: plain
    /// integers, which the recording's out-of-line path takes in
    /// registers.
    fn fields(self) -> (u64, Option<u64>) {
        match self {
            Self::Value(address) => (address as u64, None),
            Self::Site { scheme, site, slot } => {
                (scheme as u64 | SCHEME_TAG, Some(pack_site_slot(site, slot)))
            }
        }
    }
}

/// [`Entry::site_slot`]'s packing of a site and a slot.
fn pack_site_slot(site: u32, slot: u16) -> u64 {
    u64::from(site) << 16 | u64::from(slot)
}

/// A record copied out of a ring, table resolved.
#[derive(Debug, Default)]
struct Snapshot {
    table: AtomicU32,
    site_slot: AtomicU64,
    sequence: AtomicU64,
    time: AtomicU64,
}

thread_local! {
    /// The calling thread's ring. No destructor: usable during and after
    /// the thread's other thread-local destructors, and from signal
    /// handlers.
    static CURRENT: Cell<Option<&'static Ring>> = const { Cell::new(None) };
    /// Marks the ring exited when the thread ends.
    static EXIT: ExitGuard = const { ExitGuard };
}

struct ExitGuard;

unsafe extern "C" {
    /// `tls.c`: sets the calling thread's ring for `cbi_traceObserve`,
    /// an opaque pointer there.
    fn cbi__trace_set_ring(ring: *const std::ffi::c_void);
    /// `tls.c`: lets instrumented code count with plain adds while the
    /// process has one thread, unless `tracing`.
    safe fn cbi__plain_counts_start(tracing: std::ffi::c_int);
}

/// Once tracing is decided: without it, the count helpers of instrumented
/// code add plainly while the process has one thread, skipping the ring's
/// test; with it, every observation takes their traced path.
pub(crate) fn start_plain_counts() {
    cbi__plain_counts_start(enabled().into());
}

/// Sets the ring `cbi_traceObserve` records into on the calling thread.
fn set_thread_ring(ring: Option<&'static Ring>) {
    // SAFETY: stores one pointer into the calling thread's own
    // thread-local; null turns its recording off.
    unsafe { cbi__trace_set_ring(ring.map_or(ptr::null(), |ring| ptr::from_ref(ring).cast())) };
}

/// The ring behind the pointer `cbi_traceObserve` passes on.
///
/// # Safety
/// `pointer` was set by [`set_thread_ring`]: null or a leaked ring.
pub(crate) unsafe fn ring_from_tls(pointer: *const std::ffi::c_void) -> Option<&'static Ring> {
    // SAFETY: the caller's contract; rings are never freed.
    unsafe { pointer.cast::<Ring>().as_ref() }
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if let Ok(Some(ring)) = CURRENT.try_with(Cell::take) {
            set_thread_ring(None);
            ring.exited_at
                .store(SEQUENCE.load(Ordering::Relaxed), Ordering::Relaxed);
            ring.state.store(EXITED, Ordering::Release);
        }
    }
}

/// Turns tracing on with `records` per thread (at start-up, from
/// `SAMPLER_TRACE`); 0 leaves it off.
pub(crate) fn enable(records: u32) {
    if records == 0 {
        return;
    }
    let snapshot = SNAPSHOT.get_or_init(|| (0..records).map(|_| Snapshot::default()).collect());
    clock::start();
    CAPACITY.store(snapshot.len() as u32, Ordering::Release);
}

/// Whether tracing is on. Async-signal-safe.
pub(crate) fn enabled() -> bool {
    CAPACITY.load(Ordering::Relaxed) != 0
}

/// Gives the calling thread a ring, once; called at its first event,
/// outside signal handlers as far as the runtime can tell (it allocates).
pub(crate) fn prepare_thread() {
    let capacity = CAPACITY.load(Ordering::Acquire);
    if capacity == 0
        || CURRENT
            .try_with(Cell::get)
            .map_or(true, |ring| ring.is_some())
    {
        return;
    }
    // Registers the exit destructor now, outside any signal handler.
    if EXIT.try_with(|_| ()).is_err() {
        return;
    }
    let ring = take_over_exited().unwrap_or_else(|| new_ring(capacity));
    let _ = CURRENT.try_with(|current| current.set(Some(ring)));
    set_thread_ring(Some(ring));
}

/// The oldest exited ring, taken over, when more than the pool wait.
fn take_over_exited() -> Option<&'static Ring> {
    let mut exited = 0usize;
    let mut oldest: Option<&'static Ring> = None;
    for_each_ring(&mut |ring| {
        if ring.state.load(Ordering::Acquire) == EXITED {
            exited += 1;
            if oldest.is_none_or(|old| {
                ring.exited_at.load(Ordering::Relaxed) < old.exited_at.load(Ordering::Relaxed)
            }) {
                oldest = Some(ring);
            }
        }
    });
    let ring = oldest.filter(|_| exited >= EXITED_POOL)?;
    ring.state
        .compare_exchange(EXITED, CLAIMING, Ordering::Acquire, Ordering::Relaxed)
        .ok()?;
    ring.tid.store(sys::gettid(), Ordering::Relaxed);
    ring.base
        .store(ring.reserved.load(Ordering::Relaxed), Ordering::Relaxed);
    ring.state.store(LIVE, Ordering::Release);
    Some(ring)
}

fn new_ring(capacity: u32) -> &'static Ring {
    let ring: &'static Ring = Box::leak(Box::new(Ring::new(capacity)));
    let mut head = RINGS.load(Ordering::Acquire);
    loop {
        ring.next_ring.store(head, Ordering::Relaxed);
        match RINGS.compare_exchange_weak(
            head,
            ptr::from_ref(ring).cast_mut(),
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => return ring,
            Err(current) => head = current,
        }
    }
}

/// A ring of the list, from a pointer read out of `RINGS` or `next_ring`.
fn ring_at(pointer: *mut Ring) -> Option<&'static Ring> {
    // SAFETY: the list only ever holds null or pointers from `Box::leak`
    // in `new_ring`, published with release order after the ring was
    // initialised, and rings are never freed.
    unsafe { pointer.as_ref() }
}

/// Every ring, newest first, without a lock. Async-signal-safe.
fn for_each_ring(visit: &mut dyn FnMut(&'static Ring)) {
    let mut current = ring_at(RINGS.load(Ordering::Acquire));
    while let Some(ring) = current {
        visit(ring);
        current = ring_at(ring.next_ring.load(Ordering::Acquire));
    }
}

/// The records' clock: see the module's comment.
mod clock {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    use crate::sys;

    /// Whether [`now`] reads the time-stamp counter.
    static TSC: AtomicBool = AtomicBool::new(false);
    /// The counter and `CLOCK_MONOTONIC` when tracing started.
    static START_TICKS: AtomicU64 = AtomicU64::new(0);
    static START_NS: AtomicU64 = AtomicU64::new(0);

    /// Chooses the clock, when tracing is turned on.
    pub(super) fn start() {
        if let Some(ticks) = invariant_tsc() {
            START_NS.store(sys::monotonic_ns(), Ordering::Relaxed);
            START_TICKS.store(ticks(), Ordering::Relaxed);
            TSC.store(true, Ordering::Release);
        }
    }

    /// The time in the clock's ticks. Async-signal-safe.
    pub(super) fn now() -> u64 {
        match invariant_tsc().filter(|_| TSC.load(Ordering::Relaxed)) {
            Some(ticks) => ticks(),
            None => sys::monotonic_ns(),
        }
    }

    /// The `clock` line's name and ticks per second: for the counter, its
    /// ticks over the nanoseconds since [`start`] (at least 1).
    /// Async-signal-safe.
    pub(super) fn describe() -> (&'static [u8], u64) {
        let Some(ticks) = invariant_tsc().filter(|_| TSC.load(Ordering::Acquire)) else {
            return (b"CLOCK_MONOTONIC", 1_000_000_000);
        };
        let ns = sys::monotonic_ns().saturating_sub(START_NS.load(Ordering::Relaxed));
        let elapsed = ticks().saturating_sub(START_TICKS.load(Ordering::Relaxed));
        let frequency = (u128::from(elapsed) * 1_000_000_000)
            .checked_div(u128::from(ns))
            .unwrap_or(1);
        (b"TSC", u64::try_from(frequency).unwrap_or(u64::MAX).max(1))
    }

    /// `rdtsc`, when the processor says its counter is invariant (CPUID
    /// leaf 0x8000_0007, EDX bit 8: constant rate, running in every
    /// power state), so that it measures time on every core alike.
    #[cfg(target_arch = "x86_64")]
    fn invariant_tsc() -> Option<fn() -> u64> {
        use std::arch::x86_64::__cpuid;
        static CHECKED: AtomicU64 = AtomicU64::new(0);
        let known = match CHECKED.load(Ordering::Relaxed) {
            0 => {
                let highest = __cpuid(0x8000_0000).eax;
                let invariant = highest >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0;
                CHECKED.store(if invariant { 2 } else { 1 }, Ordering::Relaxed);
                invariant
            }
            checked => checked == 2,
        };
        known.then_some(rdtsc)
    }

    #[cfg(target_arch = "x86_64")]
    fn rdtsc() -> u64 {
        // SAFETY: `rdtsc` only reads the time-stamp counter, which every
        // x86-64 processor has; user mode may read it unless the kernel
        // forbids it (PR_SET_TSC), which `invariant_tsc` callers accept as
        // they would a signal from any instruction.
        unsafe { std::arch::x86_64::_rdtsc() }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn invariant_tsc() -> Option<fn() -> u64> {
        None
    }
}

/// Records one sampled observation of the calling thread into its `ring`,
/// made during the thread's sampled event number `event`. Lock-free,
/// allocation-free, async-signal-safe; does nothing without a ring.
#[inline]
pub(crate) fn observe(ring: Option<&Ring>, event: u64, observed: Observed) {
    if let Some(ring) = ring {
        ring.record(event, observed);
    }
}

/// `counter += 1`, returning the old value, as one instruction on
/// x86-64: only the ring's own thread writes `counter`, and a signal
/// handler interrupts it between instructions, so a handler that records
/// gets an index of its own without the cost of a locked instruction.
#[cfg(target_arch = "x86_64")]
fn reserve(counter: &AtomicU64) -> u64 {
    let mut old: u64 = 1;
    // SAFETY: `xadd` reads and writes the 8 aligned bytes of `counter`,
    // which we borrow; other threads only load it (x86-64's aligned
    // 8-byte accesses are single-copy atomic), and no other thread writes
    // it (see above).
    unsafe {
        std::arch::asm!(
            "xadd qword ptr [{counter}], {old}",
            counter = in(reg) counter.as_ptr(),
            old = inout(reg) old,
            options(nostack, preserves_flags),
        );
    }
    old
}

#[cfg(not(target_arch = "x86_64"))]
fn reserve(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed)
}

impl Ring {
    fn new(capacity: u32) -> Self {
        Self {
            tid: AtomicI32::new(sys::gettid()),
            state: AtomicU8::new(LIVE),
            exited_at: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            stamped_event: AtomicU64::new(0),
            event_sequence: AtomicU64::new(0),
            event_time: AtomicU64::new(0),
            base: AtomicU64::new(0),
            entries: (0..capacity.next_power_of_two())
                .map(|_| Entry::default())
                .collect(),
            next_ring: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// The entry of `index`; `None` never happens (the length is a power
    /// of two, at least 1), but costs one test where an index would cost
    /// a panic path.
    fn entry(&self, index: u64) -> Option<&Entry> {
        let mask = self.entries.len() as u64 - 1;
        self.entries.get((index & mask) as usize)
    }

    /// Writes one record at the next index (seqlock, see the module's
    /// comment). Async-signal-safe: a signal handler that records between
    /// the event's stamp and its use can give this record its own
    /// sequence number and time, never a torn one.
    #[inline]
    fn record(&self, event: u64, observed: Observed) {
        let (key, site_slot) = observed.fields();
        if self.stamped_event.load(Ordering::Relaxed) != event + 1 {
            // A tail call: the event's other observations save no
            // register for the clock's call.
            return self.stamp_and_record(event, key, site_slot);
        }
        self.push(
            key,
            site_slot,
            self.event_sequence.load(Ordering::Relaxed),
            self.event_time.load(Ordering::Relaxed),
        );
    }

    /// Takes the sequence number and the time of the thread's sampled
    /// event `event`, at its first observation, then records it.
    #[cold]
    #[inline(never)]
    fn stamp_and_record(&self, event: u64, key: u64, site_slot: Option<u64>) {
        let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let time = clock::now();
        self.event_sequence.store(sequence, Ordering::Relaxed);
        self.event_time.store(time, Ordering::Relaxed);
        self.stamped_event.store(event + 1, Ordering::Relaxed);
        self.push(key, site_slot, sequence, time);
    }

    /// Stores one record, [`Observed::fields`], with its sequence number
    /// and time at the next index.
    #[inline]
    fn push(&self, key: u64, site_slot: Option<u64>, sequence: u64, time: u64) {
        let index = reserve(&self.reserved);
        let Some(entry) = self.entry(index) else {
            return;
        };
        entry.stamp.store(0, Ordering::Relaxed);
        // The cleared stamp is visible before any field changes (seqlock).
        fence(Ordering::Release);
        entry.key.store(key, Ordering::Relaxed);
        if let Some(site_slot) = site_slot {
            entry.site_slot.store(site_slot, Ordering::Relaxed);
        }
        entry.sequence.store(sequence, Ordering::Relaxed);
        entry.time.store(time, Ordering::Relaxed);
        entry.stamp.store(index + 1, Ordering::Release);
    }
}

/// Which thread writes the report, for its block's state.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reporting {
    /// A fatal signal, or an interim report: `crashing`.
    Crash,
    /// The final report at a normal exit: `exiting`.
    Exit,
}

/// Writes `<report id="trace">`, when tracing is on: the tables of every
/// registered unit, then the block of the thread `crashing` (the one that
/// received the signal, asked for the report or is exiting; written even
/// without records, with `reporting`'s state), the live threads and the
/// exited ones. The caller holds the `WriterGuard`. Async-signal-safe.
pub(crate) fn write(out: &mut FdWriter<'_>, crashing: i32, reporting: Reporting) {
    let state: &[u8] = match reporting {
        Reporting::Crash => b"crashing",
        Reporting::Exit => b"exiting",
    };
    let Some(snapshot) = SNAPSHOT.get() else {
        return;
    };
    if !enabled() {
        return;
    }
    let (clock_name, ticks_per_second) = clock::describe();
    out.bytes(b"<report id=\"trace\">\nversion\t1\nclock\t");
    out.bytes(clock_name);
    out.bytes(b"\t");
    out.decimal(ticks_per_second);
    out.bytes(b"\n");
    let mut index = 0u32;
    registry::for_each(&mut |unit| {
        let signature = registry::signature(unit);
        for scheme in registry::schemes(unit) {
            out.bytes(b"table\t");
            out.decimal(index);
            out.bytes(b"\t");
            out.hex(signature);
            out.bytes(b"\t");
            out.bytes(registry::scheme_name(scheme));
            out.bytes(b"\n");
            index += 1;
        }
    });
    // The reporting thread's ring: live, or at exit, where the thread's
    // own thread-local destructors ran before the exit handlers, marked
    // exited (the newest one of that tid).
    let mut reporting_ring: Option<&'static Ring> = None;
    for_each_ring(&mut |ring| {
        if ring.tid.load(Ordering::Relaxed) != crashing {
            return;
        }
        match ring.state.load(Ordering::Acquire) {
            LIVE => reporting_ring = Some(ring),
            EXITED if matches!(reporting, Reporting::Exit) => {
                let newer = reporting_ring.is_none_or(|found| {
                    found.state.load(Ordering::Relaxed) == EXITED
                        && found.exited_at.load(Ordering::Relaxed)
                            < ring.exited_at.load(Ordering::Relaxed)
                });
                if newer {
                    reporting_ring = Some(ring);
                }
            }
            _ => {}
        }
    });
    match reporting_ring {
        Some(ring) => write_block(out, ring, state, snapshot),
        None => {
            out.bytes(b"thread\t");
            out.decimal(crashing);
            out.bytes(b"\t");
            out.bytes(state);
            out.bytes(b"\t0\t0\t0\n");
        }
    }
    for (state, name) in [(LIVE, &b"live"[..]), (EXITED, &b"exited"[..])] {
        for_each_ring(&mut |ring| {
            if ring.state.load(Ordering::Acquire) == state
                && reporting_ring.is_none_or(|reporting| !ptr::eq(reporting, ring))
            {
                write_block(out, ring, name, snapshot);
            }
        });
    }
    out.bytes(b"</report>\n");
    out.flush();
}

/// One thread's block: its valid records, oldest first, copied first so
/// that the `thread` line can count them.
fn write_block(out: &mut FdWriter<'_>, ring: &Ring, state: &[u8], snapshot: &[Snapshot]) {
    let n = copy_records(ring, snapshot, &locate);
    let records = &snapshot[..n];
    let first_sequence = records
        .first()
        .map_or(0, |record| record.sequence.load(Ordering::Relaxed));
    let first_time = records
        .first()
        .map_or(0, |record| record.time.load(Ordering::Relaxed));
    out.bytes(b"thread\t");
    out.decimal(ring.tid.load(Ordering::Relaxed));
    out.bytes(b"\t");
    out.bytes(state);
    out.bytes(b"\t");
    out.decimal(n);
    out.bytes(b"\t");
    out.decimal(first_sequence);
    out.bytes(b"\t");
    out.decimal(first_time);
    out.bytes(b"\n");
    let mut previous_time = first_time;
    for record in records {
        let site_slot = record.site_slot.load(Ordering::Relaxed);
        let sequence = record.sequence.load(Ordering::Relaxed);
        let time = record.time.load(Ordering::Relaxed);
        out.decimal(record.table.load(Ordering::Relaxed));
        out.bytes(b"\t");
        out.decimal(site_slot >> 16);
        out.bytes(b"\t");
        out.decimal(site_slot & 0xffff);
        out.bytes(b"\t");
        out.decimal(i128::from(sequence) - i128::from(first_sequence));
        out.bytes(b"\t");
        out.decimal(i128::from(time) - i128::from(previous_time));
        out.bytes(b"\n");
        previous_time = time;
    }
}

/// The table (its position among the registered units' tables) and the
/// `site << 16 | slot` of a record's [`Entry::key`] and `site_slot`;
/// `None` when no registered unit holds its value or table.
/// Async-signal-safe.
fn locate(key: u64, site_slot: u64) -> Option<(u32, u64)> {
    if key & SCHEME_TAG != 0 {
        let table = registry::scheme_index((key & !SCHEME_TAG) as usize)?;
        Some((table, site_slot))
    } else {
        let (table, site, slot) = registry::value_position(key as usize)?;
        Some((table, pack_site_slot(site, u16::try_from(slot).ok()?)))
    }
}

/// Copies the ring's complete records, oldest first, into `snapshot`
/// with their tables, sites and slots resolved by `locate` (`key`,
/// `site_slot` to table, `site_slot`); returns how many. Skips torn
/// entries and records that `locate` does not know (units no longer
/// registered). Async-signal-safe.
fn copy_records(
    ring: &Ring,
    snapshot: &[Snapshot],
    locate: &dyn Fn(u64, u64) -> Option<(u32, u64)>,
) -> usize {
    let capacity = ring.entries.len().min(snapshot.len()) as u64;
    let end = ring.reserved.load(Ordering::Acquire);
    let start = end
        .saturating_sub(capacity)
        .max(ring.base.load(Ordering::Acquire));
    let mut n = 0;
    for index in start..end {
        let Some(entry) = ring.entry(index) else {
            continue;
        };
        let stamp = entry.stamp.load(Ordering::Acquire);
        if stamp != index + 1 {
            continue;
        }
        let key = entry.key.load(Ordering::Relaxed);
        let site_slot = entry.site_slot.load(Ordering::Relaxed);
        let sequence = entry.sequence.load(Ordering::Relaxed);
        let time = entry.time.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if entry.stamp.load(Ordering::Relaxed) != stamp {
            continue;
        }
        let Some((table, site_slot)) = locate(key, site_slot) else {
            continue;
        };
        let Some(copy) = snapshot.get(n) else { break };
        copy.table.store(table, Ordering::Relaxed);
        copy.site_slot.store(site_slot, Ordering::Relaxed);
        copy.sequence.store(sequence, Ordering::Relaxed);
        copy.time.store(time, Ordering::Relaxed);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scheme table `table` (of a pretend registry: table addresses
    /// `SCHEMES + 8 * table`), site and slot.
    const SCHEMES: usize = 0x1000;
    /// Values of a pretend registry: table `table`'s rows of two counters
    /// at `VALUES + 0x1000 * table`.
    const VALUES: usize = 0x10_0000;

    fn site(table: usize, site: u32, slot: u16) -> Observed {
        Observed::Site {
            scheme: SCHEMES + 8 * table,
            site,
            slot,
        }
    }

    fn value(table: usize, site: usize, slot: usize) -> Observed {
        Observed::Value(VALUES + 0x1000 * table + 8 * (2 * site + slot))
    }

    /// Pushes `observed` as [`Ring::record`] does, with time 0.
    fn push(ring: &Ring, observed: Observed, sequence: u64) {
        let (key, site_slot) = observed.fields();
        ring.push(key, site_slot, sequence, 0);
    }

    /// `locate` for the pretend registry of three tables.
    fn pretend_locate(key: u64, site_slot: u64) -> Option<(u32, u64)> {
        let key = key as usize;
        if key & SCHEME_TAG as usize != 0 {
            let table = (key & !1).checked_sub(SCHEMES)? / 8;
            (table < 3).then_some((table as u32, site_slot))
        } else {
            let offset = key.checked_sub(VALUES)?;
            let (table, index) = (offset / 0x1000, offset % 0x1000 / 8);
            (table < 3).then_some((table as u32, (((index / 2) << 16) | (index % 2)) as u64))
        }
    }

    /// (table, site, slot, sequence) of what `copy_records` keeps.
    fn kept(ring: &Ring) -> Vec<(u32, u64, u64, u64)> {
        kept_last(ring, ring.entries.len())
    }

    /// [`kept`] with a snapshot of `records` (`SAMPLER_TRACE`).
    fn kept_last(ring: &Ring, records: usize) -> Vec<(u32, u64, u64, u64)> {
        let snapshot: Vec<Snapshot> = (0..records).map(|_| Snapshot::default()).collect();
        let n = copy_records(ring, &snapshot, &pretend_locate);
        snapshot[..n]
            .iter()
            .map(|record| {
                let site_slot = record.site_slot.load(Ordering::Relaxed);
                (
                    record.table.load(Ordering::Relaxed),
                    site_slot >> 16,
                    site_slot & 0xffff,
                    record.sequence.load(Ordering::Relaxed),
                )
            })
            .collect()
    }

    #[test]
    fn a_full_ring_keeps_the_last_records_oldest_first() {
        let ring = Ring::new(4);
        assert_eq!(kept(&ring), []);
        for sequence in 0..10u64 {
            push(
                &ring,
                site(sequence as usize % 3, sequence as u32, 65535),
                sequence,
            );
        }
        assert_eq!(
            kept(&ring),
            [
                (0, 6, 65535, 6),
                (1, 7, 65535, 7),
                (2, 8, 65535, 8),
                (0, 9, 65535, 9)
            ]
        );
    }

    #[test]
    fn torn_entries_and_unknown_tables_are_left_out() {
        let ring = Ring::new(4);
        for sequence in 0..4u64 {
            push(&ring, site(0, 0, 1), sequence);
        }
        // A writer interrupted after clearing the stamp of index 2.
        ring.entries[2].stamp.store(0, Ordering::Relaxed);
        // An index reserved whose record was never completed (index 4,
        // which takes over slot 0): its slot's old stamp no longer fits.
        ring.reserved.fetch_add(1, Ordering::Relaxed);
        assert_eq!(kept(&ring), [(0, 0, 1, 1), (0, 0, 1, 3)]);
        push(&ring, site(5, 0, 0), 9); // a unit since unloaded
        assert_eq!(kept(&ring), [(0, 0, 1, 3)]);
    }

    #[test]
    fn a_ring_taken_over_forgets_the_exited_threads_records() {
        let ring = Ring::new(4);
        for sequence in 0..3u64 {
            push(&ring, site(0, 0, 0), sequence);
        }
        ring.base
            .store(ring.reserved.load(Ordering::Relaxed), Ordering::Relaxed);
        assert_eq!(kept(&ring), []);
        push(&ring, site(1, 5, 1), 40);
        assert_eq!(kept(&ring), [(1, 5, 1, 40)]);
    }

    #[test]
    fn a_ring_holds_a_power_of_two_and_the_trace_the_last_asked_for() {
        let ring = Ring::new(3);
        assert_eq!(ring.entries.len(), 4);
        for sequence in 0..6u64 {
            push(&ring, site(0, sequence as u32, 0), sequence);
        }
        assert_eq!(
            kept_last(&ring, 3),
            [(0, 3, 0, 3), (0, 4, 0, 4), (0, 5, 0, 5)]
        );
    }

    #[test]
    fn the_observations_of_one_sampled_event_share_its_sequence_number_and_time() {
        let ring = Ring::new(8);
        ring.record(0, site(0, 1, 0));
        ring.record(0, value(0, 2, 1));
        ring.record(1, site(1, 3, 1));
        ring.record(5, value(2, 4, 0));
        ring.record(5, site(0, 5, 0));
        let records = kept(&ring);
        let sites: Vec<u64> = records.iter().map(|r| r.1).collect();
        assert_eq!(sites, [1, 2, 3, 4, 5]);
        // Other tests take sequence numbers concurrently: only equality
        // and order are known.
        let sequences: Vec<u64> = records.iter().map(|r| r.3).collect();
        assert_eq!(sequences[0], sequences[1]);
        assert!(sequences[1] < sequences[2] && sequences[2] < sequences[3]);
        assert_eq!(sequences[3], sequences[4]);
        let times: Vec<u64> = (0..5)
            .map(|i| ring.entries[i].time.load(Ordering::Relaxed))
            .collect();
        assert_eq!(times[0], times[1]);
        assert_eq!(times[3], times[4]);
        assert!(times[1] <= times[2] && times[2] <= times[3]);
    }

    #[test]
    fn a_value_record_names_its_table_site_and_slot_whatever_the_last_record_there() {
        let ring = Ring::new(2);
        push(&ring, site(1, 9, 2), 0);
        push(&ring, site(1, 9, 2), 1);
        // Overwrites both entries, whose site and slot stay behind.
        push(&ring, value(2, 7, 1), 2);
        push(&ring, value(0, 0, 0), 3);
        assert_eq!(kept(&ring), [(2, 7, 1, 2), (0, 0, 0, 3)]);
        // A value outside every table (a unit since unloaded).
        push(&ring, Observed::Value(VALUES + 0x1000 * 7), 4);
        assert_eq!(kept(&ring), [(0, 0, 0, 3)]);
    }
}
