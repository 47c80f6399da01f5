//! Reads a named section out of ELF files and archives of ELF objects.
//!
//! This is the library behind `extract-section`, and the way every other
//! tool gets at the site tables that `sampler-cc` embeds in
//! `.debug_site_info`: [`for_each_section`] visits each object of a file
//! (the file itself, or every member of an archive) and hands over the
//! section's bytes with NULs removed.
//!
//! Files are read through [`object::ReadCache`], so only headers and the
//! wanted section are read from disk, whatever the size of the binary.
//! Compressed sections (`SHF_COMPRESSED`, or `.zdebug_*`) are decompressed.
//! Any ELF class and byte order is accepted.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cli;

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;
use object::read::elf::{ElfFile, FileHeader};
use object::{FileKind, Object, ObjectSection, ReadCache, ReadRef};

/// What one object holds under the wanted name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionContents {
    /// The section's bytes, NULs removed. When an object has several
    /// sections of that name (as `ld -r` can leave), they are concatenated
    /// in section-header order.
    Data(Vec<u8>),
    /// There is no section of that name.
    Missing,
    /// The section exists but holds nothing once NULs are removed.
    Empty,
}

/// Why an object could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The file could not be opened or read.
    #[error("cannot read")]
    Io(#[from] std::io::Error),
    /// The file is neither ELF nor an archive.
    #[error("not an ELF file or archive ({0})")]
    NotElf(String),
    /// An archive member's header claims more bytes than the archive holds.
    #[error(
        "truncated archive: the member's {size} bytes at offset {offset} extend past the end of the file ({file_len} bytes)"
    )]
    TruncatedMember {
        /// Where the member's data starts.
        offset: u64,
        /// The size its header claims.
        size: u64,
        /// The size of the archive file.
        file_len: u64,
    },
    /// The file claims to be ELF or an archive but its structure is broken,
    /// often because it is truncated.
    #[error("malformed or truncated {what}")]
    Malformed {
        /// `ELF file` or `archive`.
        what: &'static str,
        /// What the parser found.
        source: object::read::Error,
    },
}

/// What [`for_each_section`] calls for each object: its name and what it
/// holds under the wanted section. Returning an error stops the walk.
pub type SectionVisitor<'v, E> =
    dyn FnMut(&str, Result<SectionContents, ExtractError>) -> Result<(), E> + 'v;

/// Calls `visit` once per object in `path`, in file order, with a name for
/// the object (`lib.a(member.o)` for archive members) and what it holds
/// under `section`. A file that cannot be read at all is one call with an
/// error; a broken archive member is an error for that member only.
///
/// Members of thin archives are read from the files they name, relative to
/// the archive, as the linker does.
pub fn for_each_section<E>(
    path: &Path,
    section: &str,
    visit: &mut SectionVisitor<'_, E>,
) -> Result<(), E> {
    let origin = path.display().to_string();
    let cache = match File::open(path) {
        Ok(file) => ReadCache::new(file),
        Err(error) => return visit(&origin, Err(error.into())),
    };
    match FileKind::parse(&cache) {
        Ok(FileKind::Archive) => visit_archive(path, &origin, &cache, section, visit),
        Ok(FileKind::Elf32 | FileKind::Elf64) => visit(&origin, elf_section(&cache, section)),
        Ok(kind) => visit(&origin, Err(ExtractError::NotElf(format!("{kind:?}")))),
        Err(_) => visit(&origin, Err(not_elf(&cache))),
    }
}

fn not_elf<'data>(data: impl ReadRef<'data>) -> ExtractError {
    let head = data.read_bytes_at(0, 4).unwrap_or_default();
    let head = if head.is_empty() {
        data.len().map_or("cannot read".to_owned(), |len| {
            if len == 0 {
                "the file is empty".to_owned()
            } else {
                "too short".to_owned()
            }
        })
    } else {
        let bytes: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
        format!("starts with {}", bytes.join(" "))
    };
    ExtractError::NotElf(head)
}

fn visit_archive<E>(
    path: &Path,
    origin: &str,
    cache: &ReadCache<File>,
    section: &str,
    visit: &mut SectionVisitor<'_, E>,
) -> Result<(), E> {
    let malformed = |source| ExtractError::Malformed {
        what: "archive",
        source,
    };
    let archive = match ArchiveFile::parse(cache) {
        Ok(archive) => archive,
        Err(source) => return visit(origin, Err(malformed(source))),
    };
    for member in archive.members() {
        let member = match member {
            Ok(member) => member,
            // The member table cannot be walked past a broken header.
            Err(source) => return visit(origin, Err(malformed(source))),
        };
        let name = String::from_utf8_lossy(member.name());
        let member_origin = format!("{origin}({name})");
        if member.is_thin() {
            let member_path: PathBuf = path.parent().unwrap_or(Path::new("")).join(name.as_ref());
            for_each_section(&member_path, section, &mut |inner_origin, outcome| {
                let shown = if Path::new(inner_origin) == member_path {
                    member_origin.clone()
                } else {
                    format!("{origin}({inner_origin})")
                };
                visit(&shown, outcome)
            })?;
            continue;
        }
        let (offset, size) = member.file_range();
        let file_len = cache.len().unwrap_or(0);
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            visit(
                &member_origin,
                Err(ExtractError::TruncatedMember {
                    offset,
                    size,
                    file_len,
                }),
            )?;
            continue;
        }
        let data = cache.range(offset, size);
        let outcome = match FileKind::parse(data) {
            Ok(FileKind::Elf32 | FileKind::Elf64) => elf_section(data, section),
            Ok(kind) => Err(ExtractError::NotElf(format!("{kind:?}"))),
            Err(_) => Err(not_elf(data)),
        };
        visit(&member_origin, outcome)?;
    }
    Ok(())
}

fn elf_section<'data, R: ReadRef<'data>>(
    data: R,
    section: &str,
) -> Result<SectionContents, ExtractError> {
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => {
            sections_named::<object::elf::FileHeader32<object::Endianness>, R>(data, section)
        }
        _ => sections_named::<object::elf::FileHeader64<object::Endianness>, R>(data, section),
    }
}

fn sections_named<'data, Elf: FileHeader<Endian = object::Endianness>, R: ReadRef<'data>>(
    data: R,
    name: &str,
) -> Result<SectionContents, ExtractError> {
    let malformed = |source| ExtractError::Malformed {
        what: "ELF file",
        source,
    };
    let file = ElfFile::<Elf, R>::parse(data).map_err(malformed)?;
    let mut found = false;
    let mut bytes = Vec::new();
    for section in file.sections() {
        if section.name_bytes().map_err(malformed)? != name.as_bytes() {
            continue;
        }
        found = true;
        let contents: Cow<'_, [u8]> = section.uncompressed_data().map_err(malformed)?;
        // The linker pads each input section to its alignment with NULs;
        // they are not part of the text (cbi-behaviour.md §3.6).
        bytes.extend(contents.iter().copied().filter(|&byte| byte != 0));
    }
    Ok(match (found, bytes.is_empty()) {
        (false, _) => SectionContents::Missing,
        (true, true) => SectionContents::Empty,
        (true, false) => SectionContents::Data(bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_a_non_elf_file_starts_with() {
        let data: &[u8] = b"hello world";
        assert_eq!(
            not_elf(data).to_string(),
            "not an ELF file or archive (starts with 68 65 6c 6c)"
        );
        let empty: &[u8] = b"";
        assert_eq!(
            not_elf(empty).to_string(),
            "not an ELF file or archive (the file is empty)"
        );
    }
}
