//! The two system calls nix offers only as `unsafe`: the launcher's only
//! unsafe code.
#![allow(unsafe_code)]

use nix::libc;
use nix::sys::signal::{SigHandler, SigSet, Signal};

/// Sets `signal`'s disposition back to the default (a caller may have
/// ignored it, and Rust ignores SIGPIPE), so that raising it kills us.
pub fn default_disposition(signal: Signal) -> nix::Result<()> {
    // SAFETY: installing SIG_DFL runs no code of ours in a signal context,
    // so no handler can break an invariant of this program.
    unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) }.map(|_| ())
}

/// A signal taken by `wait_signal`, with whether the kernel sent it (a
/// terminal's ^C, ^\ or window change goes to the whole foreground process
/// group, the program included) rather than a process (`kill`).
#[derive(Debug, Clone, Copy)]
pub struct Caught {
    /// The signal.
    pub signal: Signal,
    /// `si_code` is `SI_KERNEL`.
    pub from_kernel: bool,
}

/// Waits for one of `set` (blocked in every thread) and tells who sent it.
pub fn wait_signal(set: &SigSet) -> nix::Result<Caught> {
    let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
    loop {
        // SAFETY: `set` is a valid sigset_t and `info` points to writable
        // memory the size of a siginfo_t, which the call fills in.
        let number = unsafe { libc::sigwaitinfo(set.as_ref(), info.as_mut_ptr()) };
        if number < 0 {
            match nix::errno::Errno::last() {
                nix::errno::Errno::EINTR => continue,
                errno => return Err(errno),
            }
        }
        // SAFETY: sigwaitinfo succeeded, so it wrote the whole siginfo_t
        // (which was zeroed beforehand anyway).
        let info = unsafe { info.assume_init() };
        let signal = Signal::try_from(number)?;
        return Ok(Caught {
            signal,
            from_kernel: info.si_code == libc::SI_KERNEL,
        });
    }
}

/// Makes `command`'s child start with `mask` as its signal mask: the mask
/// `sampler-run` inherited, not the one it uses to take the forwarded
/// signals (std leaves the parent's mask in place).
pub fn child_signal_mask(command: &mut std::process::Command, mask: SigSet) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the closure runs between fork and exec, where only
    // async-signal-safe calls are allowed: it makes one, pthread_sigmask,
    // and neither allocates nor takes a lock.
    unsafe {
        command.pre_exec(move || mask.thread_set_mask().map_err(std::io::Error::from));
    }
}
