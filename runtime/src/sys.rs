//! Every call into libc the runtime makes, each wrapped in a safe function
//! whose comment says why the call is sound. Functions marked
//! *async-signal-safe* are the only ones the crash path may use.

use std::ffi::{CStr, OsStr, c_int, c_void};
use std::mem::MaybeUninit;
use std::ptr;

/// Writes all of `bytes` to `fd`, retrying after signals and short writes.
/// Returns `false` when the descriptor refuses more. Async-signal-safe.
pub(crate) fn write_all(fd: c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: the pointer and length describe the live slice `bytes`.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written < 0 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        if written == 0 {
            return false;
        }
        bytes = &bytes[written as usize..];
    }
    true
}

fn last_errno() -> c_int {
    // SAFETY: `__errno_location` returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// The process id. Async-signal-safe.
pub(crate) fn getpid() -> i32 {
    // SAFETY: no arguments, no memory.
    unsafe { libc::getpid() }
}

/// The calling thread's id. Async-signal-safe.
pub(crate) fn gettid() -> i32 {
    // SAFETY: no arguments, no memory.
    unsafe { libc::gettid() }
}

/// `CLOCK_MONOTONIC` in nanoseconds; 0 if the clock cannot be read.
/// Async-signal-safe (POSIX lists `clock_gettime`).
pub(crate) fn monotonic_ns() -> u64 {
    let mut now = MaybeUninit::<libc::timespec>::zeroed();
    // SAFETY: the kernel (or the vDSO) writes one timespec into memory we own.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, now.as_mut_ptr()) } != 0 {
        return 0;
    }
    // SAFETY: zeroed, then filled by the successful call above.
    let now = unsafe { now.assume_init() };
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}

/// Yields the processor to another thread. Async-signal-safe.
pub(crate) fn yield_now() {
    // SAFETY: no arguments, no memory.
    unsafe { libc::sched_yield() };
}

/// Checks that `fd` is open and marks it close-on-exec, so that programs
/// the instrumented program runs cannot write into its report.
pub(crate) fn adopt_report_fd(fd: c_int) -> std::io::Result<()> {
    // SAFETY: fcntl on an integer descriptor touches no memory; an invalid
    // descriptor fails with EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    Ok(())
}

/// Removes an environment variable.
pub(crate) fn remove_env(name: &str) {
    // SAFETY: `remove_var` races with other threads reading the
    // environment. The runtime initialises from the first unit's
    // constructor or the first sampled event, normally before the program
    // starts threads; the original runtime made the same call at the same
    // moment (`cbi-behaviour.md` §3.2).
    unsafe { std::env::remove_var(name) };
}

/// Fills `bytes` from the kernel's random source; `false` if unavailable.
pub(crate) fn os_random(bytes: &mut [u8]) -> bool {
    // SAFETY: the kernel writes at most `bytes.len()` bytes into `bytes`.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    n == bytes.len() as isize
}

/// Registers `handler` to run at `exit`.
pub(crate) fn at_exit(handler: extern "C" fn()) {
    // SAFETY: `handler` is a plain function that lives as long as the
    // runtime; in the shared library glibc runs it before unloading us.
    unsafe { libc::atexit(handler) };
}

/// Registers `handler` to run in the child after `fork`.
pub(crate) fn at_fork_child(handler: unsafe extern "C" fn()) {
    // SAFETY: as for `at_exit`; the handler only touches atomics and the
    // calling thread's thread-locals.
    unsafe { libc::pthread_atfork(None, None, Some(handler)) };
}

/// A signal disposition saved to be restored later.
#[derive(Clone, Copy)]
pub(crate) struct SavedAction(libc::sigaction);

impl std::fmt::Debug for SavedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedAction")
    }
}

/// The type of a `SA_SIGINFO` handler.
pub(crate) type SignalHandler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);

/// Installs `handler` for `signal` on the alternate stack, but only where
/// the signal still has its default disposition: a program (or `nohup`)
/// that ignores or handles a signal keeps its choice. Returns the saved
/// default disposition when installed.
pub(crate) fn take_over_default(signal: c_int, handler: SignalHandler) -> Option<SavedAction> {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: reading the disposition into a zeroed sigaction we own.
    if unsafe { libc::sigaction(signal, ptr::null(), current.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let current = unsafe { current.assume_init() };
    if current.sa_sigaction != libc::SIG_DFL {
        return None;
    }
    // SAFETY: an all-zero sigaction is valid (empty mask, no flags).
    let mut action: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    action.sa_sigaction = handler as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: `action.sa_mask` is ours to initialise.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: `action` is fully initialised; the handler is a function
    // that lives as long as the process.
    if unsafe { libc::sigaction(signal, &action, ptr::null_mut()) } != 0 {
        return None;
    }
    Some(SavedAction(current))
}

/// Puts back a saved disposition. Async-signal-safe.
pub(crate) fn restore(signal: c_int, saved: &SavedAction) {
    // SAFETY: `saved` holds a disposition the kernel gave us.
    unsafe { libc::sigaction(signal, &saved.0, ptr::null_mut()) };
}

/// Sends `signal` to the calling thread. Async-signal-safe.
pub(crate) fn raise(signal: c_int) {
    // SAFETY: no memory involved.
    unsafe { libc::raise(signal) };
}

/// An alternate signal stack for the calling thread, so that a stack
/// overflow can still be reported. Dropping it disables and unmaps it.
#[derive(Debug)]
pub(crate) struct AltStack {
    base: *mut c_void,
    size: usize,
}

impl AltStack {
    /// Big enough for the report writer and glibc's unwinder with a margin;
    /// the pages are only committed when touched.
    const SIZE: usize = 256 * 1024;

    /// Maps a stack and installs it for the calling thread, unless the
    /// thread already has one (the program's own is kept).
    pub(crate) fn install() -> Option<AltStack> {
        let mut old = MaybeUninit::<libc::stack_t>::zeroed();
        // SAFETY: reading the current alternate stack into memory we own.
        if unsafe { libc::sigaltstack(ptr::null(), old.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: initialised by the successful call above.
        let old = unsafe { old.assume_init() };
        if old.ss_flags & libc::SS_DISABLE == 0 {
            return None;
        }
        // SAFETY: a fresh anonymous private mapping; no existing memory.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                Self::SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let stack = libc::stack_t {
            ss_sp: base,
            ss_flags: 0,
            ss_size: Self::SIZE,
        };
        // SAFETY: `stack` describes the mapping above, which stays mapped
        // until `drop` has disabled the alternate stack.
        if unsafe { libc::sigaltstack(&stack, ptr::null_mut()) } != 0 {
            // SAFETY: unmapping the mapping we just made and never used.
            unsafe { libc::munmap(base, Self::SIZE) };
            return None;
        }
        Some(AltStack {
            base,
            size: Self::SIZE,
        })
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        let disable = libc::stack_t {
            ss_sp: ptr::null_mut(),
            ss_flags: libc::SS_DISABLE,
            ss_size: 0,
        };
        // SAFETY: disabling first, so the kernel never delivers a signal on
        // the memory unmapped next. Runs on the owning thread (thread-local
        // destructor), not on the alternate stack itself.
        unsafe {
            libc::sigaltstack(&disable, ptr::null_mut());
            libc::munmap(self.base, self.size);
        }
    }
}

unsafe extern "C" {
    // glibc's <execinfo.h>; not in the libc crate.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
    fn backtrace_symbols_fd(buffer: *const *mut c_void, size: c_int, fd: c_int);
}

/// Fills `frames` with the return addresses of the calling thread's stack
/// and returns how many. Async-signal-safe once [`preload_backtrace`] has
/// run: the first call loads libgcc's unwinder, which allocates.
pub(crate) fn capture_backtrace(frames: &mut [*mut c_void]) -> usize {
    let capacity = frames.len().min(c_int::MAX as usize) as c_int;
    // SAFETY: glibc writes at most `capacity` pointers into `frames`.
    let n = unsafe { backtrace(frames.as_mut_ptr(), capacity) };
    n.max(0) as usize
}

/// Loads the unwinder now, outside any signal handler.
pub(crate) fn preload_backtrace() {
    let mut frames = [ptr::null_mut(); 4];
    capture_backtrace(&mut frames);
}

/// Writes `frames` to `fd` the way `backtrace_symbols_fd` does, one line
/// per frame. Async-signal-safe: glibc documents that it does not allocate.
pub(crate) fn write_backtrace_symbols(frames: &[*mut c_void], fd: c_int) {
    // SAFETY: `frames` holds addresses from `capture_backtrace`; glibc only
    // reads them and looks them up in the loaded objects' symbol tables.
    unsafe { backtrace_symbols_fd(frames.as_ptr(), frames.len() as c_int, fd) };
}

/// One loaded object, as the dynamic loader lists it.
pub(crate) struct LoadedObject<'a> {
    /// Its path; empty for the main program.
    pub(crate) path: &'a [u8],
    /// The address its virtual addresses are relative to.
    pub(crate) load_address: usize,
    /// The contents of its `NT_GNU_BUILD_ID` note, if any.
    pub(crate) build_id: Option<&'a [u8]>,
}

/// Calls `visit` for every loaded object.
///
/// Not formally async-signal-safe: glibc takes the loader's lock, so a
/// crash *inside* `dlopen` would deadlock here. Every crash reporter that
/// symbolizes in process accepts that risk; the alternative (parsing
/// `/proc/self/maps`) cannot give build ids.
pub(crate) fn for_each_loaded_object(visit: &mut dyn FnMut(&LoadedObject<'_>)) {
    extern "C" fn callback(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the `&mut &mut dyn FnMut` passed below, alive
        // for the whole `dl_iterate_phdr` call; `info` is valid for this
        // callback.
        let (visit, info) = unsafe {
            (
                &mut *(data as *mut &mut dyn FnMut(&LoadedObject<'_>)),
                &*info,
            )
        };
        let path = if info.dlpi_name.is_null() {
            &[][..]
        } else {
            // SAFETY: the loader's names are NUL-terminated strings.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
        };
        let headers: &[libc::Elf64_Phdr] = if info.dlpi_phdr.is_null() {
            &[]
        } else {
            // SAFETY: the loader gives `dlpi_phnum` headers at `dlpi_phdr`.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let mut build_id = None;
        for header in headers.iter().filter(|h| h.p_type == libc::PT_NOTE) {
            let address = info.dlpi_addr as usize + header.p_vaddr as usize;
            // SAFETY: a PT_NOTE segment is mapped readable at load address +
            // p_vaddr for p_memsz bytes while the object is loaded.
            let notes = unsafe {
                std::slice::from_raw_parts(address as *const u8, header.p_memsz as usize)
            };
            if let Some(id) = find_build_id(notes) {
                build_id = Some(id);
                break;
            }
        }
        visit(&LoadedObject {
            path,
            load_address: info.dlpi_addr as usize,
            build_id,
        });
        0
    }
    let mut visit = visit;
    // SAFETY: `callback` only uses `data` as the `&mut dyn FnMut` it is.
    unsafe {
        libc::dl_iterate_phdr(
            Some(callback),
            (&mut visit as *mut &mut dyn FnMut(&LoadedObject<'_>)).cast(),
        )
    };
}

/// The descriptor of the `NT_GNU_BUILD_ID` note in a note segment.
fn find_build_id(mut notes: &[u8]) -> Option<&[u8]> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |bytes: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let align4 = |n: usize| (n + 3) & !3;
    while notes.len() >= 12 {
        let name_size = word(notes, 0)? as usize;
        let desc_size = word(notes, 4)? as usize;
        let kind = word(notes, 8)?;
        let name_end = 12usize.checked_add(align4(name_size))?;
        let desc_end = name_end.checked_add(align4(desc_size))?;
        let name = notes.get(12..12 + name_size)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return notes.get(name_end..name_end + desc_size);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The address of the function or object `name` in the process's global
/// scope (the program, the libraries loaded with it, those `dlopen`ed with
/// `RTLD_GLOBAL`), or null. Not async-signal-safe: the loader takes its
/// lock, and a failed lookup allocates its `dlerror` message.
pub(crate) fn global_symbol(name: &CStr) -> *mut c_void {
    // SAFETY: `name` is NUL-terminated and outlives the call; RTLD_DEFAULT
    // is a pseudo-handle dlsym always accepts. The loader only reads the
    // name, and the address it returns is not dereferenced here.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// Reads a whole file, for the countdown bank.
pub(crate) fn read_file(path: &OsStr) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_build_id_note_among_others() {
        let mut notes = Vec::new();
        for (name, kind, desc) in [
            (
                &b"GNU\0"[..],
                1u32,
                &[1u8, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0][..],
            ),
            (&b"GNU\0"[..], 3u32, &[0xde, 0xad, 0xbe, 0xef, 0x01][..]),
        ] {
            notes.extend((name.len() as u32).to_ne_bytes());
            notes.extend((desc.len() as u32).to_ne_bytes());
            notes.extend(kind.to_ne_bytes());
            notes.extend(name);
            notes.extend(desc);
            while notes.len() % 4 != 0 {
                notes.push(0);
            }
        }
        assert_eq!(
            find_build_id(&notes),
            Some(&[0xde, 0xad, 0xbe, 0xef, 0x01][..])
        );
        assert_eq!(find_build_id(&notes[..20]), None);
        assert_eq!(find_build_id(&[]), None);
    }

    #[test]
    fn this_test_binary_is_listed_with_its_build_id() {
        let mut n_objects = 0;
        let mut main_has_id = false;
        for_each_loaded_object(&mut |object| {
            n_objects += 1;
            if object.path.is_empty() {
                main_has_id = object.build_id.is_some_and(|id| !id.is_empty());
            }
        });
        assert!(n_objects >= 2, "{n_objects}");
        assert!(main_has_id);
    }
}
