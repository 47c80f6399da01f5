//! One ELF file's debugging information, ready for lookups, and where such
//! files come from.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use object::{
    Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind,
};

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// Where debugging information comes from. `resolve-backtrace` reads the
/// files named on its command line ([`DebugFileSet`]); the collector looks
/// its database up by build id.
pub trait DebugFiles {
    /// The file to symbolize the object loaded from `path` with GNU build
    /// id `build_id` (lowercase hex), if there is one.
    fn find(&self, build_id: Option<&str>, path: &str) -> Option<Arc<DebugObject>>;
}

/// Why an ELF file cannot serve for symbolization.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DebugObjectError {
    /// The bytes are not a readable ELF file.
    #[error("not a readable ELF file")]
    Elf(#[from] object::Error),
    /// The DWARF sections are there but damaged.
    #[error("damaged DWARF debugging information")]
    Dwarf(#[from] gimli::Error),
}

/// One frame of source found for an address: several for one address when
/// functions were inlined, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// The function, demangled when it is Rust or C++.
    pub function: Option<String>,
    /// The source file, as the DWARF line table names it (usually absolute).
    pub file: Option<String>,
    /// The line, counted from 1.
    pub line: Option<u32>,
}

/// An ELF executable, shared library or separate debug file, parsed once:
/// its build id, loadable segments, symbol table and DWARF (through
/// `addr2line`), for any number of lookups from any thread.
///
/// Addresses given to its methods are the file's own virtual addresses:
/// for position-independent code, the absolute address minus the load
/// address.
pub struct DebugObject {
    bytes: Arc<[u8]>,
    kind: ObjectKind,
    build_id: Option<String>,
    /// `PT_LOAD` address ranges.
    segments: Vec<(u64, u64)>,
    /// Executable sections with their bytes in the file: (start, end, file offset).
    code: Vec<(u64, u64, u64)>,
    /// Functions of `.symtab` and `.dynsym`, by address, one per address.
    symbols: Vec<Symbol>,
    /// `addr2line::Context` caches what it parses in cells that are not
    /// `Sync`; the mutex makes the object shareable between threads.
    dwarf: Option<Mutex<addr2line::Context<Reader>>>,
}

#[derive(Debug)]
struct Symbol {
    address: u64,
    size: u64,
    name: Box<str>,
}

/// Frames beyond this many for one address come from damaged DWARF.
const MAX_FRAMES_PER_ADDRESS: usize = 256;

impl DebugObject {
    /// Parses an ELF file. The DWARF sections are copied (decompressed if
    /// need be); their contents are parsed lazily, at the first lookups.
    pub fn parse(bytes: impl Into<Arc<[u8]>>) -> Result<Self, DebugObjectError> {
        let bytes: Arc<[u8]> = bytes.into();
        let file = object::File::parse(&*bytes)?;
        let build_id = file.build_id()?.map(hex);
        let segments = file
            .segments()
            .map(|segment| {
                let start = segment.address();
                (start, start.saturating_add(segment.size()))
            })
            .collect();
        let code = file
            .sections()
            .filter(|section| section.kind() == SectionKind::Text)
            .filter_map(|section| {
                let (offset, size) = section.file_range()?;
                let start = section.address();
                Some((start, start.saturating_add(size), offset))
            })
            .collect();
        let symbols = symbols(&file);
        let dwarf = match file.section_by_name(".debug_info") {
            Some(_) => Some(Mutex::new(dwarf_context(&file)?)),
            None => None,
        };
        Ok(Self {
            kind: file.kind(),
            bytes,
            build_id,
            segments,
            code,
            symbols,
            dwarf,
        })
    }

    /// The lowercase hex of the `NT_GNU_BUILD_ID` note, if there is one.
    pub fn build_id(&self) -> Option<&str> {
        self.build_id.as_deref()
    }

    /// The whole file.
    pub fn bytes(&self) -> &Arc<[u8]> {
        &self.bytes
    }

    /// True for a non-PIE executable (`ET_EXEC`), whose addresses are
    /// absolute.
    pub fn is_fixed_address(&self) -> bool {
        self.kind == ObjectKind::Executable
    }

    /// True when the file has DWARF line and function information.
    pub fn has_dwarf(&self) -> bool {
        self.dwarf.is_some()
    }

    /// True when the file has a symbol table with functions.
    pub fn has_symbols(&self) -> bool {
        !self.symbols.is_empty()
    }

    /// True when a `PT_LOAD` segment covers `address`.
    pub fn covers(&self, address: u64) -> bool {
        self.segments
            .iter()
            .any(|&(start, end)| (start..end).contains(&address))
    }

    /// The source frames of `address`, innermost (inlined) first, the
    /// function that holds the code last. Function names come from DWARF,
    /// or for the last frame from the symbol table when DWARF has none;
    /// empty when neither knows the address.
    pub fn lookup(&self, address: u64) -> Vec<SourceFrame> {
        let mut frames = Vec::new();
        if let Some(context) = &self.dwarf {
            let context = context.lock().unwrap_or_else(PoisonError::into_inner);
            // Split DWARF (`.dwo`) is not loaded: what the main file holds
            // is used. A damaged unit gives what could be read before it.
            if let Ok(mut iter) = context.find_frames(address).skip_all_loads() {
                while let Ok(Some(frame)) = iter.next() {
                    frames.push(SourceFrame {
                        function: frame
                            .function
                            .and_then(|name| name.demangle().ok().map(Cow::into_owned)),
                        file: frame
                            .location
                            .as_ref()
                            .and_then(|location| location.file.map(str::to_owned)),
                        line: frame
                            .location
                            .as_ref()
                            .and_then(|location| location.line)
                            .filter(|&line| line != 0),
                    });
                    if frames.len() == MAX_FRAMES_PER_ADDRESS {
                        break;
                    }
                }
            }
        }
        match frames.last_mut() {
            Some(last) if last.function.is_none() => last.function = self.symbol(address),
            Some(_) => {}
            None => {
                if let Some(function) = self.symbol(address) {
                    frames.push(SourceFrame {
                        function: Some(function),
                        file: None,
                        line: None,
                    });
                }
            }
        }
        frames
    }

    /// The function of the symbol table that holds `address`, demangled.
    pub fn symbol(&self, address: u64) -> Option<String> {
        self.raw_symbol(address).map(demangle)
    }

    fn raw_symbol(&self, address: u64) -> Option<&str> {
        let after = self
            .symbols
            .partition_point(|symbol| symbol.address <= address);
        let symbol = &self.symbols[after.checked_sub(1)?];
        (symbol.size == 0 || address - symbol.address < symbol.size).then_some(&*symbol.name)
    }

    /// The address of the function symbol `name` (as the symbol table
    /// spells it, mangled).
    pub fn symbol_address(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|symbol| &*symbol.name == name)
            .map(|symbol| symbol.address)
    }

    /// True when `address` is the start of a kernel signal trampoline: a
    /// symbol named so (`__restore_rt`, `__kernel_rt_sigreturn`, ...), or
    /// the `rt_sigreturn` system call's code for x86-64, i386 or AArch64
    /// (glibc's `__restore_rt` is a local symbol, absent from a stripped
    /// libc).
    pub fn is_signal_trampoline(&self, address: u64) -> bool {
        if self.raw_symbol(address).is_some_and(is_trampoline_name) {
            return true;
        }
        const SEQUENCES: [&[u8]; 4] = [
            // x86-64: mov $15, %rax; syscall
            &[0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05],
            // i386: mov $173, %eax; int $0x80
            &[0xb8, 0xad, 0x00, 0x00, 0x00, 0xcd, 0x80],
            // i386, old style: pop %eax; mov $119, %eax; int $0x80
            &[0x58, 0xb8, 0x77, 0x00, 0x00, 0x00, 0xcd, 0x80],
            // AArch64: mov x8, #139; svc #0
            &[0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4],
        ];
        SEQUENCES
            .iter()
            .any(|sequence| self.code_bytes(address, sequence.len()) == Some(sequence))
    }

    /// `length` bytes of code at `address`, when an executable section
    /// with contents in the file holds them.
    fn code_bytes(&self, address: u64, length: usize) -> Option<&[u8]> {
        let end = address.checked_add(u64::try_from(length).ok()?)?;
        let &(start, _, offset) = self
            .code
            .iter()
            .find(|&&(start, stop, _)| start <= address && end <= stop)?;
        let from = usize::try_from(offset.checked_add(address - start)?).ok()?;
        self.bytes.get(from..from.checked_add(length)?)
    }
}

/// `name` demangled when it is a mangled Rust or C++ symbol (`_R…`,
/// `_Z…`), else as it is: a C name such as `f` is no mangled `float`.
pub(crate) fn demangle(name: &str) -> String {
    let demangled = if name.starts_with("_R") || name.starts_with("_ZN") {
        addr2line::demangle(name, gimli::DW_LANG_Rust)
            .or_else(|| addr2line::demangle(name, gimli::DW_LANG_C_plus_plus))
    } else if name.starts_with("_Z") {
        addr2line::demangle(name, gimli::DW_LANG_C_plus_plus)
    } else {
        None
    };
    demangled.unwrap_or_else(|| name.to_owned())
}

/// Names of the kernel's signal return trampolines in C libraries and vDSOs.
pub(crate) fn is_trampoline_name(name: &str) -> bool {
    matches!(
        name,
        "__restore_rt"
            | "__restore"
            | "__kernel_rt_sigreturn"
            | "__kernel_sigreturn"
            | "__sigreturn"
    )
}

impl fmt::Debug for DebugObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DebugObject")
            .field("bytes", &self.bytes.len())
            .field("kind", &self.kind)
            .field("build_id", &self.build_id)
            .field("segments", &self.segments)
            .field("symbols", &self.symbols.len())
            .field("dwarf", &self.dwarf.is_some())
            .finish()
    }
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, byte| {
            let _ = write!(out, "{byte:02x}");
            out
        })
}

/// The defined functions of `.symtab` and `.dynsym`, sorted by address,
/// one per address: global before weak before local names.
fn symbols(file: &object::File<'_>) -> Vec<Symbol> {
    let mut symbols: Vec<(u8, Symbol)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|symbol| symbol.kind() == SymbolKind::Text && symbol.is_definition())
        .filter_map(|symbol| {
            let name = symbol.name().ok().filter(|name| !name.is_empty())?;
            let rank = if symbol.is_weak() {
                1
            } else if symbol.is_global() {
                0
            } else {
                2
            };
            Some((
                rank,
                Symbol {
                    address: symbol.address(),
                    size: symbol.size(),
                    name: name.into(),
                },
            ))
        })
        .collect();
    symbols.sort_by(|(rank_a, a), (rank_b, b)| {
        (a.address, rank_a, &a.name).cmp(&(b.address, rank_b, &b.name))
    });
    symbols.dedup_by_key(|(_, symbol)| symbol.address);
    symbols.into_iter().map(|(_, symbol)| symbol).collect()
}

fn dwarf_context(file: &object::File<'_>) -> Result<addr2line::Context<Reader>, DebugObjectError> {
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let mut dwarf = gimli::Dwarf::load(|id| -> Result<Reader, object::Error> {
        let data: Arc<[u8]> = match file.section_by_name(id.name()) {
            Some(section) => section.uncompressed_data()?.into(),
            None => Arc::from(&[][..]),
        };
        Ok(gimli::EndianArcSlice::new(data, endian))
    })?;
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    Ok(addr2line::Context::from_dwarf(dwarf)?)
}

/// A [`DebugFiles`] over files read once: executables, shared libraries
/// and separate debug files (`objcopy --only-keep-debug`). A module is
/// matched by GNU build id first; then, when the file has no build id or
/// the same as the module, by path, then by file name. Among several
/// matches the file with DWARF wins, then one with a symbol table, then
/// the first given.
#[derive(Debug, Default)]
pub struct DebugFileSet {
    files: Vec<DebugFile>,
}

#[derive(Debug)]
struct DebugFile {
    /// As given.
    path: PathBuf,
    /// Absolute, links resolved, when the file exists: the form of the
    /// `modules` subreport's paths.
    canonical: Option<PathBuf>,
    object: Arc<DebugObject>,
}

impl DebugFile {
    fn is_at(&self, path: &Path) -> bool {
        self.path == path || self.canonical.as_deref() == Some(path)
    }
}

/// A file given to [`DebugFileSet::from_paths`] that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DebugFileError {
    /// The file cannot be read.
    #[error("`{}`: cannot read", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not usable ELF.
    #[error("`{}`", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: DebugObjectError,
    },
}

impl DebugFileSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads and parses every file of `paths`.
    pub fn from_paths(paths: &[impl AsRef<Path>]) -> Result<Self, DebugFileError> {
        let mut set = Self::new();
        for path in paths {
            let path = path.as_ref();
            let bytes = std::fs::read(path).map_err(|source| DebugFileError::Read {
                path: path.to_owned(),
                source,
            })?;
            let object = DebugObject::parse(bytes).map_err(|source| DebugFileError::Parse {
                path: path.to_owned(),
                source,
            })?;
            set.add(path, object);
        }
        Ok(set)
    }

    /// Adds a parsed file, read from `path`.
    pub fn add(&mut self, path: impl Into<PathBuf>, object: DebugObject) {
        let path = path.into();
        self.files.push(DebugFile {
            canonical: std::fs::canonicalize(&path).ok(),
            path,
            object: Arc::new(object),
        });
    }

    /// The number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl DebugFiles for DebugFileSet {
    fn find(&self, build_id: Option<&str>, path: &str) -> Option<Arc<DebugObject>> {
        let richest = |candidates: Vec<&DebugFile>| {
            // `max_by_key` keeps the last of equals: reversed, the first given.
            candidates
                .into_iter()
                .rev()
                .max_by_key(|file| (file.object.has_dwarf(), file.object.has_symbols()))
                .map(|file| Arc::clone(&file.object))
        };
        if let Some(id) = build_id {
            let found = richest(
                self.files
                    .iter()
                    .filter(|file| file.object.build_id() == Some(id))
                    .collect(),
            );
            if found.is_some() {
                return found;
            }
        }
        // A file of another build would give wrong lines: never by path.
        let same_build = |file: &&DebugFile| match (build_id, file.object.build_id()) {
            (Some(wanted), Some(has)) => wanted == has,
            _ => true,
        };
        let wanted = Path::new(path);
        let by_path = richest(
            self.files
                .iter()
                .filter(same_build)
                .filter(|file| file.is_at(wanted))
                .collect(),
        );
        if by_path.is_some() {
            return by_path;
        }
        let name = wanted.file_name()?;
        richest(
            self.files
                .iter()
                .filter(same_build)
                .filter(|file| file.path.file_name() == Some(name))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn objects_are_shared_between_threads() {
        assert_send_sync::<DebugObject>();
        assert_send_sync::<DebugFileSet>();
    }

    #[test]
    fn not_elf_is_an_error() {
        assert!(matches!(
            DebugObject::parse(b"#!/bin/sh\n".to_vec()),
            Err(DebugObjectError::Elf(_))
        ));
        assert!(DebugObject::parse(Vec::new()).is_err());
    }

    #[test]
    fn only_mangled_names_are_demangled() {
        assert_eq!(demangle("f"), "f");
        assert_eq!(demangle("main"), "main");
        assert_eq!(
            demangle("_ZN15sampler_runtime5crash6handle17h4692d613c06aef0dE"),
            "sampler_runtime::crash::handle"
        );
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("_Z3bazi"), "baz(int)");
        assert_eq!(demangle("_Z"), "_Z");
    }

    #[test]
    fn trampoline_names() {
        assert!(is_trampoline_name("__restore_rt"));
        assert!(!is_trampoline_name("restore"));
    }
}
