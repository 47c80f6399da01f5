//! Writing feedback reports: a small buffered writer over a raw file
//! descriptor that never allocates, and the rules that make the final
//! report happen exactly once, in the process that owns it.

use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use crate::registry::{
    self, BOUNDS_MIXED, BOUNDS_POINTER, BOUNDS_SIGNED, BOUNDS_UNSIGNED, COUNTERS, CbiSchemeSites,
    CbiUnit,
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

    /// One byte: the report's separators and its many zero counters (a
    /// sampled run of the sqlite3 shell writes 290,000 values, most of
    /// them 0), without [`Self::bytes`]' general copy.
    #[inline]
    pub(crate) fn byte(&mut self, byte: u8) {
        if self.len == self.buffer.len() {
            self.flush();
        }
        if !self.failed && self.len < self.buffer.len() {
            self.buffer[self.len] = byte;
            self.len += 1;
        }
    }

    pub(crate) fn decimal(&mut self, value: impl itoa::Integer) {
        let mut digits = itoa::Buffer::new();
        self.bytes(digits.format(value).as_bytes());
    }

    /// A counter: most are 0 in a sampled run, and a single digit is one
    /// byte.
    #[inline]
    pub(crate) fn counter(&mut self, value: u64) {
        match u8::try_from(value) {
            Ok(digit @ 0..=9) => self.byte(b'0' + digit),
            _ => self.decimal(value),
        }
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
    if scheme.kind == COUNTERS {
        write_counter_rows(out, scheme.n_sites as usize, arity, &value, reset);
        return;
    }
    for site in 0..scheme.n_sites as usize {
        let row = site * arity;
        match scheme.kind {
            BOUNDS_SIGNED | BOUNDS_UNSIGNED | BOUNDS_POINTER => {
                write_bounds(out, scheme.kind, value(row), value(row + 1), reset);
            }
            BOUNDS_MIXED => {
                // The row's own kind, written by the compiler and never
                // changed: read, never reset.
                let site_kind = value(row + 2).load(Ordering::Relaxed);
                let site_kind = u32::try_from(site_kind).unwrap_or(BOUNDS_UNSIGNED);
                write_bounds(out, site_kind, value(row), value(row + 1), reset);
            }
            _ => {}
        }
        out.byte(b'\n');
    }
}

/// The rows of a counters table. Most rows of a sampled run are all zero
/// (the sqlite3 shell writes 290,000 values): the table is scanned for its
/// next nonzero value, four loads to a test ([`first_nonzero`]), and the
/// all-zero rows before it are written from a pattern of zero rows, about
/// two instructions a value where formatting each cost about 20 (16.5 M
/// instructions at the shell's exit) and testing each row in turn about
/// 17 (4.8 M; stop 41). A zero counter is not swapped on `reset`: it is
/// already what a reset leaves, and an increment racing with the read
/// stays for the next report. Async-signal-safe: no allocation, the
/// pattern is on the stack.
fn write_counter_rows<'v>(
    out: &mut FdWriter<'_>,
    n_sites: usize,
    arity: usize,
    value: &impl Fn(usize) -> &'v AtomicU64,
    reset: bool,
) {
    let mut pattern = [0u8; 512];
    let row_len = 2 * arity;
    let rows_in_pattern = if arity == 0 {
        0
    } else {
        pattern.len() / row_len
    };
    for (at, byte) in pattern[..rows_in_pattern * row_len].iter_mut().enumerate() {
        *byte = match at % 2 {
            0 => b'0',
            _ if at % row_len == row_len - 1 => b'\n',
            _ => b'\t',
        };
    }
    let write_row = |out: &mut FdWriter<'_>, site: usize| {
        let row = site * arity;
        for slot in 0..arity {
            if slot > 0 {
                out.byte(b'\t');
            }
            out.counter(take(value(row + slot), reset, 0));
        }
        out.byte(b'\n');
    };
    if rows_in_pattern == 0 {
        // No pattern fits (no values, or rows over 256 values): row by row.
        for site in 0..n_sites {
            write_row(out, site);
        }
        return;
    }
    let total = n_sites * arity;
    let mut site = 0;
    while site < n_sites {
        // Every row before the next nonzero value's is all zero.
        let next = first_nonzero(value, site * arity, total) / arity;
        let mut zero_rows = next - site;
        while zero_rows > 0 {
            let rows = zero_rows.min(rows_in_pattern);
            out.bytes(&pattern[..rows * row_len]);
            zero_rows -= rows;
        }
        if next >= n_sites {
            break;
        }
        write_row(out, next);
        site = next + 1;
    }
}

/// The index of the first value from `from` (included) to `to` (excluded)
/// that is not 0, or `to`. One test per four loads: a sampled run's
/// tables are mostly zeros.
fn first_nonzero<'v>(value: &impl Fn(usize) -> &'v AtomicU64, from: usize, to: usize) -> usize {
    let load = |at: usize| value(at).load(Ordering::Relaxed);
    let mut at = from;
    while to - at >= 4 && load(at) | load(at + 1) | load(at + 2) | load(at + 3) == 0 {
        at += 4;
    }
    while at < to && load(at) == 0 {
        at += 1;
    }
    at
}

/// One bounds row `min TAB max` of the given kind, reset to the kind's
/// initial (max, min); an unknown kind is unsigned. Async-signal-safe.
fn write_bounds(out: &mut FdWriter<'_>, kind: u32, min: &AtomicU64, max: &AtomicU64, reset: bool) {
    match kind {
        BOUNDS_SIGNED => {
            out.decimal(take(min, reset, i64::MAX as u64) as i64);
            out.bytes(b"\t");
            out.decimal(take(max, reset, i64::MIN as u64) as i64);
        }
        BOUNDS_POINTER => {
            out.address(take(min, reset, u64::MAX));
            out.bytes(b"\t");
            out.address(take(max, reset, 0));
        }
        _ => {
            out.decimal(take(min, reset, u64::MAX));
            out.bytes(b"\t");
            out.decimal(take(max, reset, 0));
        }
    }
}

/// Writes one `<report id="samples">` block with the given units.
fn write_samples_block(out: &mut FdWriter<'_>, units: &mut dyn FnMut(&mut FdWriter<'_>)) {
    out.bytes(b"<report id=\"samples\">\n");
    units(out);
    out.bytes(b"</report>\n");
    out.flush();
}

/// The final report at normal exit: every registered unit, once; then,
/// with `SAMPLER_TRACE`, the trace (the exiting thread marked `exiting`),
/// so that runs that end well have their last events too.
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
    registry::locked(|| {
        crate::trace::write(&mut out, sys::gettid(), crate::trace::Reporting::Exit);
    });
}

/// Writes one samples block with `units`, in the process that owns the
/// report and only until the final report is written: what comes after it
/// (destructors running at exit) is already counted there.
fn write_block_before_final(units: &mut dyn FnMut(&mut FdWriter<'_>), with_trace: bool) {
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
    if with_trace {
        // Under the registry lock, so the `table` lines and the records'
        // table indices see the same units.
        registry::locked(|| {
            crate::trace::write(&mut out, sys::gettid(), crate::trace::Reporting::Crash);
        });
    }
}

/// The samples of one unit being unloaded, then reset.
pub(crate) fn write_unloaded_unit(unit: &CbiUnit) {
    write_block_before_final(&mut |out| write_unit(out, unit, true), false);
}

/// An interim report: every unit's samples since the last one, then reset,
/// and the trace (with `SAMPLER_TRACE`; the calling thread marked
/// `crashing`, as the format says), which is not reset.
pub(crate) fn write_interim() {
    write_block_before_final(
        &mut |out| {
            registry::for_each_locked(&mut |unit| write_unit(out, unit, true));
        },
        true,
    );
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

    /// What `write` writes through an `FdWriter` with a `capacity`-byte
    /// buffer, read back from a pipe (the text must fit in the pipe).
    fn written(capacity: usize, write: impl FnOnce(&mut FdWriter<'_>)) -> String {
        let mut pipe = [0 as c_int; 2];
        // SAFETY: test-only pipe into a local array.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        let mut buffer = vec![0u8; capacity];
        let mut out = FdWriter::new(pipe[1], &mut buffer);
        write(&mut out);
        out.flush();
        // SAFETY: closing our own write end.
        unsafe { libc::close(pipe[1]) };
        let mut text = Vec::new();
        let mut read_end = std::fs::File::from(
            // SAFETY: we own the read end and hand it to File.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(pipe[0]) },
        );
        std::io::Read::read_to_end(&mut read_end, &mut text).unwrap();
        String::from_utf8(text).unwrap()
    }

    /// A unit with one `bounds` scheme of `kind` and `arity` over `values`.
    fn with_bounds_unit<T>(
        kind: u32,
        arity: u32,
        values: &mut [u64],
        body: impl FnOnce(&CbiUnit) -> T,
    ) -> T {
        let signature = [0xabu8; 16];
        let mut scheme = CbiSchemeSites {
            scheme: c"bounds".as_ptr(),
            kind,
            arity,
            n_sites: (values.len() / arity as usize) as u32,
            reserved: 0,
            values: values.as_mut_ptr().cast(),
            first_timestamps: std::ptr::null_mut(),
            last_timestamps: std::ptr::null_mut(),
        };
        let unit = CbiUnit {
            abi_version: registry::ABI_VERSION,
            n_schemes: 1,
            signature: signature.as_ptr(),
            schemes: &mut scheme,
            registry_next: std::ptr::null_mut(),
        };
        assert_eq!(registry::check(&unit), Ok(()));
        body(&unit)
    }

    fn section(rows: &str) -> String {
        format!(
            "<samples unit=\"abababababababababababababababab\" scheme=\"bounds\">\n{rows}</samples>\n"
        )
    }

    const SIGNED_FRESH: [u64; 2] = [i64::MAX as u64, i64::MIN as u64];
    const UNSIGNED_FRESH: [u64; 2] = [u64::MAX, 0];

    #[test]
    fn the_bounds_kinds_print_their_own_way_and_reset_to_min_greater_than_max() {
        for (kind, observed, text, fresh, fresh_text) in [
            (
                BOUNDS_SIGNED,
                [-7i64 as u64, 40],
                "-7\t40\n",
                SIGNED_FRESH,
                "9223372036854775807\t-9223372036854775808\n",
            ),
            (
                BOUNDS_UNSIGNED,
                [3, u64::MAX - 1],
                "3\t18446744073709551614\n",
                UNSIGNED_FRESH,
                "18446744073709551615\t0\n",
            ),
            (
                BOUNDS_POINTER,
                [0, 0x7ffc_3a10],
                "(nil)\t0x7ffc3a10\n",
                UNSIGNED_FRESH,
                "0xffffffffffffffff\t(nil)\n",
            ),
        ] {
            let mut values = observed;
            with_bounds_unit(kind, 2, &mut values, |unit| {
                let final_text = written(64, |out| write_unit(out, unit, false));
                assert_eq!(final_text, section(text), "kind {kind}");
                let interim = written(64, |out| write_unit(out, unit, true));
                assert_eq!(interim, section(text), "kind {kind}");
                let after = written(64, |out| write_unit(out, unit, true));
                assert_eq!(after, section(fresh_text), "kind {kind}");
            });
            assert_eq!(values, fresh, "kind {kind}");
        }
    }

    /// The report's rows of a counters table of `arity` values a row.
    fn counter_rows(values: &[u64], arity: usize) -> String {
        values
            .chunks(arity)
            .map(|row| {
                let row: Vec<String> = row.iter().map(u64::to_string).collect();
                row.join("\t") + "\n"
            })
            .collect()
    }

    /// Every placement of one or two counts in small tables, for the scan
    /// that skips zero rows four values at a time: at the first and last
    /// value, in one row or two, with rows of 1 to 5 values.
    #[test]
    fn counts_anywhere_in_a_table_print_in_their_rows() {
        for arity in 1..=5usize {
            for rows in 0..=6usize {
                let total = rows * arity;
                for first in 0..total {
                    for second in first..total {
                        let mut values = vec![0u64; total];
                        values[first] = 3;
                        values[second] += 40;
                        let expected = counter_rows(&values, arity);
                        with_bounds_unit(COUNTERS, arity as u32, &mut values, |unit| {
                            let text = written(4096, |out| write_unit(out, unit, true));
                            assert_eq!(text, section(&expected), "{arity} {rows} {first} {second}");
                        });
                        assert!(values.iter().all(|&v| v == 0));
                    }
                }
            }
        }
    }

    /// Runs of all-zero rows, longer than one pattern of them, between
    /// and after rows with counts, come out as rows of zeros; rows of a
    /// single zero (arity 1) too.
    #[test]
    fn runs_of_zero_rows_print_as_the_rows_they_are() {
        for arity in [1usize, 2, 3, 9] {
            let rows = 700 / arity;
            let mut values = vec![0u64; rows * arity];
            values[arity * 3] = 5;
            values[arity * (rows - 40) + arity - 1] = 12;
            let expected = counter_rows(&values, arity);
            with_bounds_unit(COUNTERS, arity as u32, &mut values, |unit| {
                for capacity in [7, 4096] {
                    let text = written(capacity, |out| write_unit(out, unit, false));
                    assert_eq!(text, section(&expected), "arity {arity}");
                }
                let text = written(4096, |out| write_unit(out, unit, true));
                assert_eq!(text, section(&expected), "arity {arity}");
            });
            assert!(values.iter().all(|&v| v == 0), "arity {arity}");
        }
    }

    /// Counters, with the one-byte fast path for zeros, single digits and
    /// separators, come out the same whatever the buffer's size, down to
    /// one byte (a flush before every byte), and reset to zero.
    #[test]
    fn counters_print_the_same_through_any_buffer_and_reset_to_zero() {
        let rows = "0\t7\t12\n0\t0\t1\n18446744073709551615\t0\t305\n";
        for capacity in [1, 2, 3, 5, 64] {
            let mut values = [0, 7, 12, 0, 0, 1, u64::MAX, 0, 305];
            with_bounds_unit(COUNTERS, 3, &mut values, |unit| {
                let text = written(capacity, |out| write_unit(out, unit, false));
                assert_eq!(text, section(rows), "capacity {capacity}");
                let text = written(capacity, |out| write_unit(out, unit, true));
                assert_eq!(text, section(rows), "capacity {capacity}");
            });
            assert_eq!(values, [0; 9], "capacity {capacity}");
        }
    }

    #[test]
    fn mixed_bounds_print_and_reset_each_row_as_its_own_kind() {
        let signed = u64::from(BOUNDS_SIGNED);
        let unsigned = u64::from(BOUNDS_UNSIGNED);
        let pointer = u64::from(BOUNDS_POINTER);
        #[rustfmt::skip]
        let mut values = [
            -7i64 as u64, 40, signed,
            3, u64::MAX - 1, unsigned,
            0, 0x7ffc_3a10, pointer,
            i64::MAX as u64, i64::MIN as u64, signed,  // never observed
            u64::MAX, 0, pointer,                      // never observed
            -1i64 as u64, 5, 99,                       // unknown kind: unsigned
            5, 9, u64::from(u32::MAX) + 1 + signed,    // unknown kind: unsigned
        ];
        let observed = "-7\t40\n\
                        3\t18446744073709551614\n\
                        (nil)\t0x7ffc3a10\n\
                        9223372036854775807\t-9223372036854775808\n\
                        0xffffffffffffffff\t(nil)\n\
                        18446744073709551615\t5\n\
                        5\t9\n";
        let fresh = "9223372036854775807\t-9223372036854775808\n\
                     18446744073709551615\t0\n\
                     0xffffffffffffffff\t(nil)\n\
                     9223372036854775807\t-9223372036854775808\n\
                     0xffffffffffffffff\t(nil)\n\
                     18446744073709551615\t0\n\
                     18446744073709551615\t0\n";
        with_bounds_unit(BOUNDS_MIXED, 3, &mut values, |unit| {
            // A small buffer, so that rows straddle flushes.
            assert_eq!(
                written(16, |out| write_unit(out, unit, false)),
                section(observed)
            );
            assert_eq!(
                written(16, |out| write_unit(out, unit, true)),
                section(observed)
            );
            assert_eq!(
                written(16, |out| write_unit(out, unit, true)),
                section(fresh)
            );
        });
        #[rustfmt::skip]
        let reset = [
            i64::MAX as u64, i64::MIN as u64, signed,
            u64::MAX, 0, unsigned,
            u64::MAX, 0, pointer,
            i64::MAX as u64, i64::MIN as u64, signed,
            u64::MAX, 0, pointer,
            u64::MAX, 0, 99,
            u64::MAX, 0, u64::from(u32::MAX) + 1 + signed,
        ];
        assert_eq!(values, reset);
    }

    #[test]
    fn addresses_print_as_glibc_prints_pointers() {
        let text = written(16, |out| {
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
        });
        assert_eq!(text, "(nil) 0x7ffc3a10 0xffffffffffffffff 0x0 -5 00ab");
    }
}
