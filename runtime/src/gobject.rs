//! `cbi_gObjectUnrefClassify`: what a `g_object_unref` argument is, for the
//! g-object-unref scheme. GLib is not a dependency: its type check is
//! looked up in the process once, and without it nothing is a GObject.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::sys;

/// The counter slots of the scheme (`sampler.h`).
const REF_COUNT_ZERO: c_int = 0;
const REF_COUNT_ONE: c_int = 1;
const REF_COUNT_MORE: c_int = 2;
pub(crate) const NOT_AN_OBJECT: c_int = 3;

/// `G_TYPE_OBJECT`: `G_TYPE_MAKE_FUNDAMENTAL (20)`, i.e. `20 << 2`.
const G_TYPE_OBJECT: usize = 20 << 2;

/// `gboolean g_type_check_instance_is_fundamentally_a (GTypeInstance *,
/// GType)`, `GType` being a `gsize`.
type IsFundamentallyA = unsafe extern "C" fn(*const c_void, usize) -> c_int;

/// The address of `g_type_check_instance_is_fundamentally_a`, or one of:
const NOT_LOOKED_UP: usize = 0;
const NOT_LOADED: usize = 1;
static IS_FUNDAMENTALLY_A: AtomicUsize = AtomicUsize::new(NOT_LOOKED_UP);

/// GLib's type check, looked up at the first call. A program with
/// g-object-unref sites calls `g_object_unref`, so GLib is loaded before
/// any of its sites runs; threads racing on the first lookup all store
/// the same answer.
fn is_fundamentally_a() -> Option<IsFundamentallyA> {
    let mut address = IS_FUNDAMENTALLY_A.load(Ordering::Acquire);
    if address == NOT_LOOKED_UP {
        let found = sys::global_symbol(c"g_type_check_instance_is_fundamentally_a");
        address = if found.is_null() {
            NOT_LOADED
        } else {
            found as usize
        };
        IS_FUNDAMENTALLY_A.store(address, Ordering::Release);
    }
    if address == NOT_LOADED {
        return None;
    }
    // SAFETY: `address` is what dlsym returned for GLib's function of this
    // name, whose C type is `IsFundamentallyA`; code addresses and
    // function pointers have the same representation on the targets we
    // support.
    Some(unsafe { std::mem::transmute::<usize, IsFundamentallyA>(address) })
}

/// `cbi_gObjectUnrefClassify`: GLib's `G_IS_OBJECT`, then the reference
/// count read atomically.
///
/// # Safety
/// `object` is null or what `G_IS_OBJECT` may be given: a live
/// `GTypeInstance`, whose first word is its class pointer (and, when GLib
/// says it is a GObject, followed by the `guint ref_count` of a live
/// `GObject`).
pub(crate) unsafe fn classify(object: *const c_void) -> c_int {
    if object.is_null() || !(object as usize).is_multiple_of(align_of::<usize>()) {
        return NOT_AN_OBJECT;
    }
    // SAFETY: per the contract a live, aligned GTypeInstance, whose class
    // pointer GLib may set concurrently (never while the object is in
    // use), hence the atomic load; nothing is written through it.
    let class =
        unsafe { AtomicUsize::from_ptr(object.cast::<usize>().cast_mut()) }.load(Ordering::Relaxed);
    if class == 0 {
        return NOT_AN_OBJECT;
    }
    let Some(is_fundamentally_a) = is_fundamentally_a() else {
        return NOT_AN_OBJECT;
    };
    // SAFETY: what G_IS_OBJECT does: a live instance with a class pointer,
    // passed to GLib's own check with the GType of GObject.
    if unsafe { is_fundamentally_a(object, G_TYPE_OBJECT) } == 0 {
        return NOT_AN_OBJECT;
    }
    // SAFETY: GLib says `object` is a GObject: `struct _GObject` is a
    // GTypeInstance (one pointer) then the `guint ref_count`, which is
    // aligned (it follows a pointer) and which GLib only changes with
    // atomic operations. We only read it.
    let ref_count = unsafe {
        AtomicU32::from_ptr(
            object
                .byte_add(size_of::<*const c_void>())
                .cast::<u32>()
                .cast_mut(),
        )
    }
    .load(Ordering::Relaxed);
    match ref_count {
        0 => REF_COUNT_ZERO,
        1 => REF_COUNT_ONE,
        _ => REF_COUNT_MORE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Something shaped like a GObject: class pointer, ref_count, qdata.
    #[repr(C)]
    struct LooksLikeAnObject {
        class: *const c_void,
        ref_count: u32,
        qdata: *const c_void,
    }

    #[test]
    fn without_glib_nothing_is_an_object() {
        assert!(
            sys::global_symbol(c"g_type_check_instance_is_fundamentally_a").is_null(),
            "this test needs a process without GLib"
        );
        let class = 0u64;
        let mut lookalike = LooksLikeAnObject {
            class: (&raw const class).cast(),
            ref_count: 1,
            qdata: std::ptr::null(),
        };
        let object = (&raw mut lookalike).cast::<c_void>().cast_const();
        // SAFETY: null, and a live struct shaped like a GTypeInstance.
        assert_eq!(unsafe { classify(std::ptr::null()) }, NOT_AN_OBJECT);
        // SAFETY: as above.
        assert_eq!(unsafe { classify(object) }, NOT_AN_OBJECT);
        // SAFETY: as above, through the exported function.
        let exported = unsafe {
            [
                crate::abi::cbi_gObjectUnrefClassify(std::ptr::null()),
                crate::abi::cbi_gObjectUnrefClassify(object),
            ]
        };
        assert_eq!(exported, [NOT_AN_OBJECT; 2]);
        assert!(lookalike.qdata.is_null() && lookalike.ref_count == 1);
    }
}
