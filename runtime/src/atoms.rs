//! `cbi_atomsObserve`: whether an observed access to an address follows
//! one by another thread, for the atoms scheme.
//!
//! A fixed, process-wide, direct-mapped table remembers the last observed
//! access per slot: the address (as most of its hash) and a small id of
//! the thread, packed in one `AtomicU64` that each observation swaps, so
//! that threads racing on a slot each see the access swapped before
//! theirs. Lock-free, no allocation: async-signal-safe.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

const SLOT_BITS: u32 = 12;
const SLOTS: usize = 1 << SLOT_BITS;
/// The low bits of a slot: the thread id, never 0 in a used slot.
const THREAD_BITS: u32 = 20;
const THREAD_MASK: u64 = (1 << THREAD_BITS) - 1;
/// The rest of a slot: the low bits of the address's hash. With the slot
/// number (the hash's high bits) they identify 56 of its 64 bits, so two
/// addresses sharing a slot pass for one with probability 2^-44.
const TAG_MASK: u64 = (1 << (64 - THREAD_BITS)) - 1;

/// 0: never used.
static TABLE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// The next thread's number, from 1.
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's id in `TABLE`; 0 until its first observation. No
    /// destructor, so it is usable until the thread is gone.
    static THREAD_ID: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's id, 1 ..= THREAD_MASK; ids repeat after that many
/// threads. Async-signal-safe: a signal between the two accesses to
/// `THREAD_ID` that observes too only costs a number.
fn thread_id() -> u64 {
    let id = THREAD_ID.get();
    if id != 0 {
        return id;
    }
    let number = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    let id = (number - 1) % THREAD_MASK + 1;
    THREAD_ID.set(id);
    id
}

/// MurmurHash3's finaliser: a bijection of u64 whose bits all depend on
/// every address bit, so that neighbouring addresses spread over slots.
fn mix(address: u64) -> u64 {
    let mut h = address;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The slot of a hash: its high bits, the best mixed.
fn slot_of(hash: u64) -> usize {
    (hash >> (64 - SLOT_BITS)) as usize
}

/// Records an observed access to `address` by the calling thread; returns
/// whether the previous observed access to it (as far as its slot still
/// remembers) was by another thread.
pub(crate) fn observe(address: usize) -> bool {
    let hash = mix(address as u64);
    let tag = hash & TAG_MASK;
    let me = thread_id();
    let previous = TABLE[slot_of(hash)].swap((tag << THREAD_BITS) | me, Ordering::Relaxed);
    // An empty slot has thread 0, so it never matches `tag` with a thread.
    previous >> THREAD_BITS == tag && previous & THREAD_MASK != 0 && previous & THREAD_MASK != me
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Mutex;

    use super::*;

    /// The slots some test uses: tests run in parallel on the one table.
    static TAKEN: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

    fn slot_of_address(address: usize) -> usize {
        slot_of(mix(address as u64))
    }

    /// `count` addresses from `start` up, spaced like the fields of a
    /// struct, each in a slot no other address handed out uses.
    fn fresh_addresses(start: usize, count: usize) -> Vec<usize> {
        let mut taken = TAKEN.lock().unwrap();
        let taken = taken.get_or_insert_with(HashSet::new);
        (start..)
            .step_by(8)
            .filter(|&address| taken.insert(slot_of_address(address)))
            .take(count)
            .collect()
    }

    fn on_another_thread<T: Send>(body: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| scope.spawn(body).join().unwrap())
    }

    #[test]
    fn an_access_after_another_threads_is_remote() {
        let [x, y] = fresh_addresses(0x5a00_0000, 2)[..] else {
            unreachable!()
        };
        assert!(!observe(x), "never observed");
        assert!(!observe(x), "same thread");
        assert!(on_another_thread(|| observe(x)), "after the main thread");
        assert!(observe(x), "after the other thread");
        assert!(!observe(x));
        // y is untouched by all that, and does not disturb x.
        assert!(!observe(y));
        assert!(on_another_thread(|| observe(y)));
        assert!(!observe(x), "y disturbed x");
        assert!(observe(y));
    }

    #[test]
    fn an_address_taking_over_a_slot_counts_as_never_observed() {
        let x = fresh_addresses(0x6b00_0000, 1)[0];
        // Another address of the same slot: the slot is ours.
        let y = (x + 8..)
            .step_by(8)
            .find(|&address| slot_of_address(address) == slot_of_address(x))
            .unwrap();
        assert!(!observe(x));
        assert!(!on_another_thread(|| observe(y)), "another address");
        assert!(!observe(x), "x was forgotten");
        assert!(on_another_thread(|| observe(x)));
    }

    #[test]
    fn the_exported_function_answers_0_and_1() {
        // Raw pointers are not Send: the threads share the number.
        let address = fresh_addresses(0x7c00_0000, 1)[0];
        let observe = || crate::abi::cbi_atomsObserve(address as *const std::ffi::c_void);
        assert_eq!(observe(), 0);
        assert_eq!(observe(), 0);
        assert_eq!(on_another_thread(observe), 1);
        assert_eq!(observe(), 1);
        assert_eq!(observe(), 0);
    }

    #[test]
    fn thread_ids_are_small_distinct_and_stable() {
        let mine = thread_id();
        assert_eq!(thread_id(), mine);
        let theirs = on_another_thread(thread_id);
        assert_ne!(mine, theirs);
        assert!((1..=THREAD_MASK).contains(&mine) && (1..=THREAD_MASK).contains(&theirs));
    }
}
