//! The units of the program, in an intrusive list through their
//! `registry_next` field, which the crash path can walk without a lock.

// The ABI structs are named by the exported functions' signatures.
#![allow(unreachable_pub)]

use std::ffi::{CStr, c_char, c_void};
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

/// `struct cbi_scheme_sites` of `sampler.h`.
#[repr(C)]
#[derive(Debug)]
pub struct CbiSchemeSites {
    pub(crate) scheme: *const c_char,
    pub(crate) kind: u32,
    pub(crate) arity: u32,
    pub(crate) n_sites: u32,
    pub(crate) reserved: u32,
    pub(crate) values: *mut c_void,
    pub(crate) first_timestamps: *mut u64,
    pub(crate) last_timestamps: *mut u64,
}

/// `struct cbi_unit` of `sampler.h`.
#[repr(C)]
#[derive(Debug)]
pub struct CbiUnit {
    pub(crate) abi_version: u32,
    pub(crate) n_schemes: u32,
    pub(crate) signature: *const u8,
    pub(crate) schemes: *mut CbiSchemeSites,
    pub(crate) registry_next: *mut CbiUnit,
}

pub(crate) const ABI_VERSION: u32 = 2;

/// `enum cbi_values_kind`.
pub(crate) const COUNTERS: u32 = 0;
pub(crate) const BOUNDS_SIGNED: u32 = 1;
pub(crate) const BOUNDS_UNSIGNED: u32 = 2;
pub(crate) const BOUNDS_POINTER: u32 = 3;
/// Rows `{min, max, site_kind}`, `site_kind` one of the three kinds above.
pub(crate) const BOUNDS_MIXED: u32 = 4;

/// The first registered unit; the rest follow `registry_next`.
static HEAD: AtomicPtr<CbiUnit> = AtomicPtr::new(ptr::null_mut());
/// Serialises changes to the list; readers never take it.
static CHANGES: Mutex<()> = Mutex::new(());

/// `unit.registry_next`, as an atomic.
///
/// # Safety
/// `unit` points to a live `CbiUnit` whose `registry_next` is only ever
/// accessed through this function while registered.
unsafe fn next_of(unit: *mut CbiUnit) -> &'static AtomicPtr<CbiUnit> {
    // SAFETY: per the contract, the field is live, aligned (repr(C)
    // pointer field) and only accessed atomically.
    unsafe { AtomicPtr::from_ptr(ptr::addr_of_mut!((*unit).registry_next)) }
}

/// Why a unit was refused.
pub(crate) fn check(unit: &CbiUnit) -> Result<(), String> {
    if unit.abi_version != ABI_VERSION {
        return Err(format!(
            "a unit built for runtime ABI {} was ignored; this runtime speaks ABI {ABI_VERSION}",
            unit.abi_version
        ));
    }
    if unit.signature.is_null() || (unit.n_schemes > 0 && unit.schemes.is_null()) {
        return Err("a unit with a null signature or scheme table was ignored".to_owned());
    }
    for scheme in schemes(unit) {
        let name = scheme_name(scheme);
        let valid_name = !name.is_empty()
            && name
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
        let valid_shape = match scheme.kind {
            COUNTERS => scheme.arity >= 1,
            BOUNDS_SIGNED | BOUNDS_UNSIGNED | BOUNDS_POINTER => scheme.arity == 2,
            BOUNDS_MIXED => scheme.arity == 3,
            _ => false,
        };
        if !valid_name || !valid_shape || (scheme.n_sites > 0 && scheme.values.is_null()) {
            return Err(format!(
                "a unit with a malformed `{}` scheme table was ignored",
                String::from_utf8_lossy(name)
            ));
        }
    }
    Ok(())
}

/// The scheme tables of a unit that passed [`check`].
pub(crate) fn schemes(unit: &CbiUnit) -> &[CbiSchemeSites] {
    if unit.n_schemes == 0 || unit.schemes.is_null() {
        return &[];
    }
    // SAFETY: the ABI says `schemes` points to `n_schemes` entries that
    // live as long as the unit.
    unsafe { std::slice::from_raw_parts(unit.schemes, unit.n_schemes as usize) }
}

/// The scheme's name without its NUL. Async-signal-safe.
pub(crate) fn scheme_name(scheme: &CbiSchemeSites) -> &[u8] {
    if scheme.scheme.is_null() {
        return b"";
    }
    // SAFETY: the ABI says `scheme` is a NUL-terminated string.
    unsafe { CStr::from_ptr(scheme.scheme) }.to_bytes()
}

/// The unit's 16 signature bytes. Async-signal-safe.
pub(crate) fn signature(unit: &CbiUnit) -> &[u8; 16] {
    // SAFETY: checked non-null at registration; the ABI says 16 bytes.
    unsafe { &*(unit.signature as *const [u8; 16]) }
}

/// Adds `unit` at the front, unless it is already registered.
///
/// # Safety
/// `unit` points to a `CbiUnit` that passed [`check`] and stays valid
/// until [`unregister`] returns.
pub(crate) unsafe fn register(unit: *mut CbiUnit) {
    let _guard = CHANGES.lock().unwrap_or_else(|poison| poison.into_inner());
    if contains(unit) {
        return;
    }
    let head = HEAD.load(Ordering::Acquire);
    // SAFETY: per the contract; the unit is not in the list yet, so no
    // reader sees the field while it is set.
    unsafe { next_of(unit) }.store(head, Ordering::Relaxed);
    // Release: a reader that sees the new head sees its `next` too.
    HEAD.store(unit, Ordering::Release);
}

/// Removes `unit`; returns whether it was registered.
///
/// # Safety
/// As for [`register`].
pub(crate) unsafe fn unregister(unit: *mut CbiUnit) -> bool {
    let _guard = CHANGES.lock().unwrap_or_else(|poison| poison.into_inner());
    let mut link: &AtomicPtr<CbiUnit> = &HEAD;
    loop {
        let current = link.load(Ordering::Acquire);
        if current.is_null() {
            return false;
        }
        // SAFETY: every unit in the list is live (contract of `register`).
        let next = unsafe { next_of(current) };
        if current == unit {
            link.store(next.load(Ordering::Acquire), Ordering::Release);
            return true;
        }
        link = next;
    }
}

fn contains(unit: *mut CbiUnit) -> bool {
    let mut found = false;
    for_each_raw(&mut |current| found |= current == unit);
    found
}

fn for_each_raw(visit: &mut dyn FnMut(*mut CbiUnit)) {
    let mut current = HEAD.load(Ordering::Acquire);
    while !current.is_null() {
        visit(current);
        // SAFETY: every unit in the list is live (contract of `register`).
        current = unsafe { next_of(current) }.load(Ordering::Acquire);
    }
}

/// Calls `visit` for every registered unit, newest first, without locking:
/// usable from the crash path. Async-signal-safe.
pub(crate) fn for_each(visit: &mut dyn FnMut(&CbiUnit)) {
    // SAFETY: every unit in the list is live (contract of `register`).
    for_each_raw(&mut |unit| visit(unsafe { &*unit }));
}

/// Calls `visit` for every registered unit while holding the change lock,
/// so no unit can be unloaded meanwhile. Not for the crash path.
pub(crate) fn for_each_locked(visit: &mut dyn FnMut(&CbiUnit)) {
    let _guard = CHANGES.lock().unwrap_or_else(|poison| poison.into_inner());
    for_each(visit);
}

/// Runs `body` while holding the change lock, so that no unit is
/// registered or unloaded meanwhile. Not for the crash path.
pub(crate) fn locked<T>(body: impl FnOnce() -> T) -> T {
    let _guard = CHANGES.lock().unwrap_or_else(|poison| poison.into_inner());
    body()
}

/// The position, among the scheme tables of every registered unit
/// counted in [`for_each`] order (units newest first, each unit's schemes
/// in order), of the first table for which `matches` gives something, and
/// that. Async-signal-safe when `matches` is.
fn find_table<T>(mut matches: impl FnMut(&CbiSchemeSites) -> Option<T>) -> Option<(u32, T)> {
    let mut before = 0usize;
    let mut found = None;
    for_each(&mut |unit| {
        for table in schemes(unit) {
            if found.is_none()
                && let Some(result) = matches(table)
            {
                found = Some((before, result));
            }
            before += 1;
        }
    });
    let (index, result) = found?;
    Some((u32::try_from(index).ok()?, result))
}

/// The position of the scheme table at `address` among the scheme tables
/// of every registered unit ([`find_table`]'s order); `None` when no
/// registered unit holds it. `address` is only compared, never read.
/// Async-signal-safe.
pub(crate) fn scheme_index(address: usize) -> Option<u32> {
    find_table(|table| (ptr::from_ref(table) as usize == address).then_some(()))
        .map(|(index, ())| index)
}

/// The table, site and slot of the value at `address`: the position of
/// the scheme table whose values hold it ([`find_table`]'s order), its row
/// and its column. `None` when no registered unit's values hold it or it
/// is not the start of one. Every kind of table holds 8-byte values,
/// `arity` to a row. `address` is only compared, never read.
/// Async-signal-safe.
pub(crate) fn value_position(address: usize) -> Option<(u32, u32, u32)> {
    const VALUE: usize = size_of::<u64>();
    let (table, (site, slot)) = find_table(|table| {
        let offset = address.checked_sub(table.values as usize)?;
        let row = table.arity as usize * VALUE;
        (offset < row.saturating_mul(table.n_sites as usize) && offset.is_multiple_of(VALUE))
            .then(|| (offset / row, offset % row / VALUE))
    })?;
    Some((table, u32::try_from(site).ok()?, u32::try_from(slot).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit_with(kind: u32, arity: u32, values: &mut [u64]) -> Result<(), String> {
        let signature = [0u8; 16];
        let mut scheme = CbiSchemeSites {
            scheme: c"bounds".as_ptr(),
            kind,
            arity,
            n_sites: 1,
            reserved: 0,
            values: values.as_mut_ptr().cast(),
            first_timestamps: ptr::null_mut(),
            last_timestamps: ptr::null_mut(),
        };
        let unit = CbiUnit {
            abi_version: ABI_VERSION,
            n_schemes: 1,
            signature: signature.as_ptr(),
            schemes: &mut scheme,
            registry_next: ptr::null_mut(),
        };
        check(&unit)
    }

    #[test]
    fn mixed_bounds_need_three_values_per_site_and_the_others_two() {
        let mut values = [0u64; 3];
        assert_eq!(unit_with(BOUNDS_MIXED, 3, &mut values), Ok(()));
        for arity in [0, 1, 2, 4] {
            assert!(
                unit_with(BOUNDS_MIXED, arity, &mut values).is_err(),
                "{arity}"
            );
        }
        for kind in [BOUNDS_SIGNED, BOUNDS_UNSIGNED, BOUNDS_POINTER] {
            assert_eq!(unit_with(kind, 2, &mut values), Ok(()));
            assert!(unit_with(kind, 3, &mut values).is_err(), "{kind}");
        }
        assert_eq!(unit_with(COUNTERS, 3, &mut values), Ok(()));
        assert!(unit_with(5, 3, &mut values).is_err());
    }
}
