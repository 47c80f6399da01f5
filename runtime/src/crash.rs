//! The crash path: on a fatal or terminating signal, write the samples, the
//! crashing thread's backtrace, the loaded modules and (with
//! `SAMPLER_TRACE`) the trace, then let the signal
//! do what it would have done without us.
//!
//! Invariants (the handler runs in a broken process):
//! - no allocation, no stdio, no locks but the bounded `WriterGuard`;
//! - it runs on the thread's alternate stack, so a stack overflow reports;
//! - it restores the disposition it replaced and re-raises, so the exit
//!   signal and core dump are those of the program without us.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use crate::report::{self, FdWriter, WriterGuard};
use crate::sys::{self, AltStack, SavedAction};

/// Fatal signals, then terminating ones (`kill`, watchdogs, ^C).
pub(crate) const SIGNALS: [c_int; 11] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTRAP,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGXCPU,
    libc::SIGALRM,
];

/// The dispositions we replaced, by signal number; written once before any
/// handler is installed, read-only afterwards.
static SAVED: OnceLock<[Option<SavedAction>; 65]> = OnceLock::new();

/// The main program's path (the loader lists it as ""), read at start-up
/// because the crash path cannot allocate.
static EXECUTABLE: OnceLock<Vec<u8>> = OnceLock::new();

thread_local! {
    static ALT_STACK: RefCell<Option<AltStack>> = const { RefCell::new(None) };
}

/// Installs the handlers; called once, when a report destination is open.
pub(crate) fn install() {
    sys::preload_backtrace();
    let _ = EXECUTABLE.set(
        std::fs::read_link("/proc/self/exe")
            .map(|path| path.into_os_string().into_encoded_bytes())
            .unwrap_or_default(),
    );
    prepare_thread();
    SAVED.get_or_init(|| {
        let mut saved = [None; 65];
        for signal in SIGNALS {
            saved[signal as usize] = sys::take_over_default(signal, handle);
        }
        saved
    });
}

/// Gives the calling thread an alternate signal stack, once.
pub(crate) fn prepare_thread() {
    if report::REPORT_FD.load(Ordering::Acquire) < 0 {
        return;
    }
    let _ = ALT_STACK.try_with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut()
            && slot.is_none()
        {
            *slot = AltStack::install();
        }
    });
}

extern "C" fn handle(signal: c_int, _info: *mut libc::siginfo_t, _context: *mut c_void) {
    if let Some(fd) = report::owned_fd() {
        // A thread stopped while writing must not hold the crash report
        // back for long: about a second of yields.
        if let Some(_guard) = WriterGuard::acquire(Some(100_000)) {
            write_crash_report(fd);
        }
    }
    if let Some(saved) = SAVED
        .get()
        .and_then(|saved| saved[signal as usize].as_ref())
    {
        sys::restore(signal, saved);
    }
    // Blocked while we run; delivered with the restored disposition as soon
    // as we return. A fault would also recur on return.
    sys::raise(signal);
}

fn write_crash_report(fd: c_int) {
    let mut buffer = [0u8; 4096];
    let mut out = FdWriter::new(fd, &mut buffer);
    if !report::write_crash_samples(&mut out) {
        return;
    }
    let mut frames = [std::ptr::null_mut::<c_void>(); 256];
    let n_frames = sys::capture_backtrace(&mut frames);
    out.bytes(b"<report id=\"main-backtrace\">\n");
    out.flush();
    sys::write_backtrace_symbols(&frames[..n_frames], out.fd());
    out.bytes(b"</report>\n");
    write_modules(&mut out);
    crate::trace::write(&mut out, sys::gettid(), crate::trace::Reporting::Crash);
    out.flush();
}

/// `<report id="modules">`: `load-address TAB build-id TAB path` per loaded
/// object (build id `-` when absent), so that addresses of position-
/// independent code can be symbolized offline.
fn write_modules(out: &mut FdWriter<'_>) {
    out.bytes(b"<report id=\"modules\">\n");
    let executable = EXECUTABLE.get().map(Vec::as_slice).unwrap_or_default();
    sys::for_each_loaded_object(&mut |object| {
        // The vDSO has no file; nothing to symbolize it with.
        if object.path.starts_with(b"linux-vdso") {
            return;
        }
        out.hex_number(object.load_address as u64);
        out.bytes(b"\t");
        match object.build_id {
            Some(id) if !id.is_empty() => out.hex(id),
            _ => out.bytes(b"-"),
        }
        out.bytes(b"\t");
        out.bytes(if object.path.is_empty() {
            executable
        } else {
            object.path
        });
        out.bytes(b"\n");
    });
    out.bytes(b"</report>\n");
}
