//! Writing feedback reports: a small buffered writer over a raw file
//! descriptor that never allocates, and the rules that make the final
//! report happen exactly once, in the process that owns it.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::registry::{
    self, BOUNDS_POINTER, BOUNDS_SIGNED, BOUNDS_UNSIGNED, COUNTERS, CbiSchemeSites, CbiUnit,
};
use crate::sys;

/// The report's descriptor; -1 when no report is wanted.
pub(crate) static REPORT_FD: AtomicI32 = AtomicI32::new(-1);
/// The process that opened the report; a forked child is not it.
pub(crate) static OWNER_PID: AtomicI32 = AtomicI32::new(0);
/// Set once the final samples are written (at exit or on a fatal signal).
static FINAL_DONE: AtomicBool = AtomicBool::new(false);
/// The thread id of the thread writing to the report; 0 when none.
static WRITER: AtomicI32 = AtomicI32::new(0);

/// The report descriptor, if this process should write to it.
/// Async-signal-safe.
pub(crate) fn owned_fd() -> Option<c_int> {
    let fd = REPORT_FD.load(Ordering::Acquire);
    (fd >= 0 && OWNER_PID.load(Ordering::Acquire) == sys::getpid()).then_some(fd)
}

/// Exclusive right to write the report, released on drop.
pub(crate) struct WriterGuard(());

impl WriterGuard {
    /// Waits for the report. `None` if the calling thread already writes it
    /// (a crash inside the writer), or when `patience` runs out, which only
    /// the crash path uses: it must not wait forever for a thread that may
    /// be stopped.
    pub(crate) fn acquire(patience: Option<u32>) -> Option<WriterGuard> {
        let me = sys::gettid();
        let mut tries = 0u32;
        loop {
            match WRITER.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(WriterGuard(())),
                Err(holder) if holder == me => return None,
                Err(_) => {}
            }
            tries += 1;
            if patience.is_some_and(|limit| tries > limit) {
                return None;
            }
            sys::yield_now();
        }
    }
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        WRITER.store(0, Ordering::Release);
    }
}

/// A buffer on the caller's stack in front of `write(2)`. Async-signal-safe:
/// no allocation, no locks. After a failed write it drops everything.
pub(crate) struct FdWriter<'b> {
    fd: c_int,
    buffer: &'b mut [u8],
    len: usize,
    failed: bool,
}

impl<'b> FdWriter<'b> {
    pub(crate) fn new(fd: c_int, buffer: &'b mut [u8]) -> Self {
        Self {
            fd,
            buffer,
            len: 0,
            failed: false,
        }
    }

    pub(crate) fn bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.failed {
            if self.len == self.buffer.len() {
                self.flush();
            }
            let n = bytes.len().min(self.buffer.len() - self.len);
            self.buffer[self.len..self.len + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
        }
    }

    pub(crate) fn decimal(&mut self, value: impl itoa::Integer) {
        let mut digits = itoa::Buffer::new();
        self.bytes(digits.format(value).as_bytes());
    }

    pub(crate) fn hex(&mut self, bytes: &[u8]) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for byte in bytes {
            self.bytes(&[
                DIGITS[usize::from(byte >> 4)],
                DIGITS[usize::from(byte & 15)],
            ]);
        }
    }

    /// `0x…` in lowercase without leading zeros, as glibc prints `%p`,
    /// and `(nil)` for the null pointer as glibc does.
    pub(crate) fn address(&mut self, address: u64) {
        if address == 0 {
            self.bytes(b"(nil)");
        } else {
            self.hex_number(address);
        }
    }

    /// `0x…` in lowercase without leading zeros; `0x0` for zero.
    pub(crate) fn hex_number(&mut self, value: u64) {
        self.bytes(b"0x");
        let significant = (64 - value.leading_zeros()).div_ceil(4).max(1);
        for shift in (0..significant).rev() {
            let digit = ((value >> (shift * 4)) & 15) as usize;
            self.bytes(&[b"0123456789abcdef"[digit]]);
        }
    }

    pub(crate) fn flush(&mut self) {
        if !self.failed && self.len > 0 {
            self.failed = !sys::write_all(self.fd, &self.buffer[..self.len]);
        }
        self.len = 0;
    }

    pub(crate) fn fd(&self) -> c_int {
        self.fd
    }
}

/// Writes the `<samples>` and `<timestamps>` sections of `unit`; with
/// `reset`, sets every value back to its initial state as it is read, so
/// that each event is counted in exactly one report. Async-signal-safe.
pub(crate) fn write_unit(out: &mut FdWriter<'_>, unit: &CbiUnit, reset: bool) {
    let signature = registry::signature(unit);
    for scheme in registry::schemes(unit) {
        if scheme.n_sites == 0 {
            continue;
        }
        let name = registry::scheme_name(scheme);
        out.bytes(b"<samples unit=\"");
        out.hex(signature);
        out.bytes(b"\" scheme=\"");
        out.bytes(name);
        out.bytes(b"\">\n");
        write_values(out, scheme, reset);
        out.bytes(b"</samples>\n");
        for (stamps, when) in [
            (scheme.first_timestamps, &b"first"[..]),
            (scheme.last_timestamps, &b"last"[..]),
        ] {
            if stamps.is_null() {
                continue;
            }
            out.bytes(b"<timestamps unit=\"");
            out.hex(signature);
            out.bytes(b"\" scheme=\"");
            out.bytes(name);
            out.bytes(b"\" when=\"");
            out.bytes(when);
            out.bytes(b"\">\n");
            for site in 0..scheme.n_sites as usize {
                // SAFETY: the ABI gives `n_sites` 8-byte aligned entries.
                let stamp = unsafe { AtomicU64::from_ptr(stamps.add(site)) };
                out.decimal(take(stamp, reset, 0));
                out.bytes(b"\n");
            }
            out.bytes(b"</timestamps>\n");
        }
    }
}

fn take(value: &AtomicU64, reset: bool, initial: u64) -> u64 {
    if reset {
        value.swap(initial, Ordering::Relaxed)
    } else {
        value.load(Ordering::Relaxed)
    }
}

fn write_values(out: &mut FdWriter<'_>, scheme: &CbiSchemeSites, reset: bool) {
    let arity = scheme.arity as usize;
    let values = scheme.values.cast::<u64>();
    let value = |index: usize| {
        // SAFETY: `check` accepted this table, so `values` holds
        // `n_sites × arity` 8-byte aligned values (indices stay below that),
        // which the program updates atomically or from one thread.
        unsafe { AtomicU64::from_ptr(values.add(index)) }
    };
    for site in 0..scheme.n_sites as usize {
        let row = site * arity;
        match scheme.kind {
            COUNTERS => {
                for slot in 0..arity {
                    if slot > 0 {
                        out.bytes(b"\t");
                    }
                    out.decimal(take(value(row + slot), reset, 0));
                }
            }
            BOUNDS_SIGNED => {
                let min = take(value(row), reset, i64::MAX as u64) as i64;
                let max = take(value(row + 1), reset, i64::MIN as u64) as i64;
                out.decimal(min);
                out.bytes(b"\t");
                out.decimal(max);
            }
            BOUNDS_UNSIGNED => {
                out.decimal(take(value(row), reset, u64::MAX));
                out.bytes(b"\t");
                out.decimal(take(value(row + 1), reset, 0));
            }
            BOUNDS_POINTER => {
                out.address(take(value(row), reset, u64::MAX));
                out.bytes(b"\t");
                out.address(take(value(row + 1), reset, 0));
            }
            _ => {}
        }
        out.bytes(b"\n");
    }
}

/// Writes one `<report id="samples">` block with the given units.
fn write_samples_block(out: &mut FdWriter<'_>, units: &mut dyn FnMut(&mut FdWriter<'_>)) {
    out.bytes(b"<report id=\"samples\">\n");
    units(out);
    out.bytes(b"</report>\n");
    out.flush();
}

/// The final report at normal exit: every registered unit, once.
pub(crate) fn write_final() {
    let Some(fd) = owned_fd() else { return };
    let Some(_guard) = WriterGuard::acquire(None) else {
        return;
    };
    if FINAL_DONE.swap(true, Ordering::AcqRel) {
        return;
    }
    let mut buffer = [0u8; 8192];
    let mut out = FdWriter::new(fd, &mut buffer);
    write_samples_block(&mut out, &mut |out| {
        registry::for_each_locked(&mut |unit| write_unit(out, unit, false));
    });
}

/// Writes one samples block with `units`, in the process that owns the
/// report and only until the final report is written: what comes after it
/// (destructors running at exit) is already counted there.
fn write_block_before_final(units: &mut dyn FnMut(&mut FdWriter<'_>)) {
    let Some(fd) = owned_fd() else { return };
    let Some(_guard) = WriterGuard::acquire(None) else {
        return;
    };
    if FINAL_DONE.load(Ordering::Acquire) {
        return;
    }
    let mut buffer = [0u8; 8192];
    let mut out = FdWriter::new(fd, &mut buffer);
    write_samples_block(&mut out, units);
}

/// The samples of one unit being unloaded, then reset.
pub(crate) fn write_unloaded_unit(unit: &CbiUnit) {
    write_block_before_final(&mut |out| write_unit(out, unit, true));
}

/// An interim report: every unit's samples since the last one, then reset.
pub(crate) fn write_interim() {
    write_block_before_final(&mut |out| {
        registry::for_each_locked(&mut |unit| write_unit(out, unit, true));
    });
}

/// The crash report's samples: like [`write_final`], but walking the
/// units without the registry lock. The caller holds the `WriterGuard` so
/// that the backtrace and modules follow in the same stretch. Returns
/// `false`, writing nothing, when the final samples were already written.
/// Async-signal-safe.
pub(crate) fn write_crash_samples(out: &mut FdWriter<'_>) -> bool {
    if FINAL_DONE.swap(true, Ordering::AcqRel) {
        return false;
    }
    write_samples_block(out, &mut |out| {
        registry::for_each(&mut |unit| write_unit(out, unit, false));
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_print_as_glibc_prints_pointers() {
        let mut pipe = [0 as c_int; 2];
        // SAFETY: test-only pipe into a local array.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        let mut buffer = [0u8; 16];
        let mut out = FdWriter::new(pipe[1], &mut buffer);
        out.address(0);
        out.bytes(b" ");
        out.address(0x7ffc_3a10);
        out.bytes(b" ");
        out.address(u64::MAX);
        out.bytes(b" ");
        out.hex_number(0);
        out.bytes(b" ");
        out.decimal(-5i64);
        out.bytes(b" ");
        out.hex(&[0x00, 0xab]);
        out.flush();
        // SAFETY: closing our own write end.
        unsafe { libc::close(pipe[1]) };
        let mut text = Vec::new();
        let mut read_end = std::fs::File::from(
            // SAFETY: we own the read end and hand it to File.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(pipe[0]) },
        );
        std::io::Read::read_to_end(&mut read_end, &mut text).unwrap();
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "(nil) 0x7ffc3a10 0xffffffffffffffff 0x0 -5 00ab"
        );
    }
}
