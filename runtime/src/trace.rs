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
//!   nothing: it reserves an index with `fetch_add` on the ring (so a
//!   signal handler recording on the same thread gets its own), clears the
//!   entry's stamp, stores the fields, then stores the stamp `index + 1`
//!   with release order, a seqlock: a reader keeps an entry only if it
//!   reads the same expected stamp before and after the fields, so a torn
//!   entry (a writer interrupted by the crash, or still running on
//!   another thread) is skipped, never written half.
//! - **Writing the trace** ([`write()`]) copies one thread's valid records
//!   into a snapshot buffer allocated when tracing is enabled (the writer
//!   holds the report's `WriterGuard`, so one buffer serves), then writes
//!   the block with the allocation-free `FdWriter`: the count of a block
//!   is known before its first line, even while the thread keeps running.
//!   Records name their scheme table by its address; it is mapped to the
//!   `table` line of the registered unit that holds it, and a record of a
//!   unit since unloaded is left out.

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
/// The process-wide sequence number of the next record.
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
    /// The address of the record's `struct cbi_scheme_sites`.
    scheme: AtomicU64,
    /// `site << 16 | slot`.
    site_slot: AtomicU64,
    sequence: AtomicU64,
    time: AtomicU64,
}

#[derive(Debug)]
struct Ring {
    tid: AtomicI32,
    state: AtomicU8,
    /// The sequence number when the thread exited, to find the oldest.
    exited_at: AtomicU64,
    /// Indices reserved so far (records written, or being written).
    reserved: AtomicU64,
    /// The first index of the current owner: older entries belong to a
    /// thread that exited before this one took the ring over.
    base: AtomicU64,
    entries: Box<[Entry]>,
    next_ring: AtomicPtr<Ring>,
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

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if let Ok(Some(ring)) = CURRENT.try_with(Cell::take) {
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

/// Records one sampled observation of the calling thread: the counter
/// `slot` of `site` in the scheme table at address `scheme`. Lock-free,
/// allocation-free, async-signal-safe; does nothing when tracing is off,
/// the thread has no ring, or `slot` is not below 2^16.
pub(crate) fn observe(scheme: usize, site: u32, slot: u32) {
    if CAPACITY.load(Ordering::Relaxed) == 0 {
        return;
    }
    let Ok(slot) = u16::try_from(slot) else {
        return;
    };
    let Ok(Some(ring)) = CURRENT.try_with(Cell::get) else {
        return;
    };
    ring.record(
        scheme as u64,
        site,
        slot,
        SEQUENCE.fetch_add(1, Ordering::Relaxed),
    );
}

impl Ring {
    fn new(capacity: u32) -> Self {
        Self {
            tid: AtomicI32::new(sys::gettid()),
            state: AtomicU8::new(LIVE),
            exited_at: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            base: AtomicU64::new(0),
            entries: (0..capacity).map(|_| Entry::default()).collect(),
            next_ring: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Writes one record at the next index (seqlock, see the module's
    /// comment). Async-signal-safe.
    fn record(&self, scheme: u64, site: u32, slot: u16, sequence: u64) {
        let index = self.reserved.fetch_add(1, Ordering::Relaxed);
        let entry = &self.entries[(index % self.entries.len() as u64) as usize];
        entry.stamp.store(0, Ordering::Relaxed);
        // The cleared stamp is visible before any field changes (seqlock).
        fence(Ordering::Release);
        entry.scheme.store(scheme, Ordering::Relaxed);
        entry
            .site_slot
            .store(u64::from(site) << 16 | u64::from(slot), Ordering::Relaxed);
        entry.sequence.store(sequence, Ordering::Relaxed);
        entry.time.store(sys::monotonic_ns(), Ordering::Relaxed);
        entry.stamp.store(index + 1, Ordering::Release);
    }
}

/// Writes `<report id="trace">`, when tracing is on: the tables of every
/// registered unit, then the block of the thread `crashing` (the one that
/// received the signal or asked for the report; written even without
/// records), the live threads and the exited ones. The caller holds the
/// `WriterGuard`. Async-signal-safe.
pub(crate) fn write(out: &mut FdWriter<'_>, crashing: i32) {
    let Some(snapshot) = SNAPSHOT.get() else {
        return;
    };
    if !enabled() {
        return;
    }
    out.bytes(b"<report id=\"trace\">\nversion\t1\nclock\tCLOCK_MONOTONIC\t1000000000\n");
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
    let mut crashing_written = false;
    for_each_ring(&mut |ring| {
        if ring.state.load(Ordering::Acquire) == LIVE
            && ring.tid.load(Ordering::Relaxed) == crashing
            && !crashing_written
        {
            write_block(out, ring, b"crashing", snapshot);
            crashing_written = true;
        }
    });
    if !crashing_written {
        out.bytes(b"thread\t");
        out.decimal(crashing);
        out.bytes(b"\tcrashing\t0\t0\t0\n");
    }
    for (state, name) in [(LIVE, &b"live"[..]), (EXITED, &b"exited"[..])] {
        for_each_ring(&mut |ring| {
            if ring.state.load(Ordering::Acquire) == state
                && (state != LIVE || ring.tid.load(Ordering::Relaxed) != crashing)
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
    let n = copy_records(ring, snapshot, &|scheme| {
        registry::scheme_index(scheme as usize)
    });
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

/// Copies the ring's complete records, oldest first, into `snapshot`
/// with their tables resolved by `table_of`; returns how many. Skips torn
/// entries and records whose table `table_of` does not know (units no
/// longer registered). Async-signal-safe.
fn copy_records(
    ring: &Ring,
    snapshot: &[Snapshot],
    table_of: &dyn Fn(u64) -> Option<u32>,
) -> usize {
    let capacity = ring.entries.len().min(snapshot.len()) as u64;
    let end = ring.reserved.load(Ordering::Acquire);
    let start = end
        .saturating_sub(capacity)
        .max(ring.base.load(Ordering::Acquire));
    let mut n = 0;
    for index in start..end {
        let entry = &ring.entries[(index % ring.entries.len() as u64) as usize];
        let stamp = entry.stamp.load(Ordering::Acquire);
        if stamp != index + 1 {
            continue;
        }
        let scheme = entry.scheme.load(Ordering::Relaxed);
        let site_slot = entry.site_slot.load(Ordering::Relaxed);
        let sequence = entry.sequence.load(Ordering::Relaxed);
        let time = entry.time.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if entry.stamp.load(Ordering::Relaxed) != stamp {
            continue;
        }
        let Some(table) = table_of(scheme) else {
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

    /// (table, site, slot, sequence) of what `copy_records` keeps, with
    /// scheme addresses 100 + table standing for registered tables.
    fn kept(ring: &Ring) -> Vec<(u32, u64, u64, u64)> {
        let snapshot: Vec<Snapshot> = (0..ring.entries.len())
            .map(|_| Snapshot::default())
            .collect();
        let n = copy_records(ring, &snapshot, &|scheme| {
            scheme.checked_sub(100).and_then(|t| u32::try_from(t).ok())
        });
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
            ring.record(100 + sequence % 3, sequence as u32, 65535, sequence);
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
            ring.record(100, 0, 1, sequence);
        }
        // A writer interrupted after clearing the stamp of index 2.
        ring.entries[2].stamp.store(0, Ordering::Relaxed);
        // An index reserved whose record was never completed (index 4,
        // which takes over slot 0): its slot's old stamp no longer fits.
        ring.reserved.fetch_add(1, Ordering::Relaxed);
        assert_eq!(kept(&ring), [(0, 0, 1, 1), (0, 0, 1, 3)]);
        ring.record(7, 0, 0, 9); // a unit since unloaded
        assert_eq!(kept(&ring), [(0, 0, 1, 3)]);
    }

    #[test]
    fn a_ring_taken_over_forgets_the_exited_threads_records() {
        let ring = Ring::new(4);
        for sequence in 0..3u64 {
            ring.record(100, 0, 0, sequence);
        }
        ring.base
            .store(ring.reserved.load(Ordering::Relaxed), Ordering::Relaxed);
        assert_eq!(kept(&ring), []);
        ring.record(101, 5, 1, 40);
        assert_eq!(kept(&ring), [(1, 5, 1, 40)]);
    }
}
