//! The static site tables of a program, loaded from `.sites` files or from
//! the `.debug_site_info` sections of binaries, indexed by section key.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use sampler_extract::{SectionContents, for_each_section};
use sampler_formats::{ReadError, SectionKey, SiteTableEvent, SiteTableReader};

/// The ELF section in which `sampler-cc` embeds site tables.
pub const SITE_INFO_SECTION: &str = ".debug_site_info";

/// Where `sampler-cc -fsampler-rates` records each site's scale
/// (`schema/site-table.md`, "Scales").
pub const SITE_SCALES_SECTION: &str = ".debug_site_scales";

/// Why site tables could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A file could not be opened or read.
    #[error("`{origin}`: cannot read")]
    Io {
        /// The file.
        origin: String,
        /// What failed.
        source: std::io::Error,
    },
    /// A binary could not be read as ELF.
    #[error("`{origin}`")]
    Elf {
        /// The file, or `archive(member)`.
        origin: String,
        /// What the ELF reader found.
        source: sampler_extract::ExtractError,
    },
    /// A binary holds no site table at all.
    #[error("`{origin}` has no `{SITE_INFO_SECTION}` section: was it built by `sampler-cc`?")]
    NoSiteInfo {
        /// The file.
        origin: String,
    },
    /// A site table is malformed.
    #[error("`{origin}`")]
    Syntax {
        /// The file, or `archive(member)`; line numbers count lines of the
        /// extracted section for binaries.
        origin: String,
        /// Where and what.
        source: ReadError,
    },
    /// Two sources describe the same unit and scheme differently.
    #[error(
        "{key}: `{first}` and `{second}` hold different site tables ({first_sites} and {second_sites} sites) for the same unit signature"
    )]
    Conflict {
        /// The unit and scheme.
        key: SectionKey,
        /// Where the table was first found.
        first: String,
        /// Where the other table was found.
        second: String,
        /// Sites in the first table.
        first_sites: usize,
        /// Sites in the second table.
        second_sites: usize,
    },
}

/// Site tables by (unit, scheme), each remembering which file it came from.
///
/// The site lines of a table are kept as one string, not parsed values:
/// the join only prints them, and a program with a million sites then costs
/// one allocation per table rather than several per site.
#[derive(Debug, Default)]
pub struct SiteStore {
    origins: Vec<String>,
    tables: HashMap<SectionKey, StoredTable>,
    /// The scales sites were built with (`.debug_site_scales` of binaries
    /// built with `sampler-cc -fsampler-rates`); 1 elsewhere.
    scales: sampler_formats::SiteScales,
}

#[derive(Debug, PartialEq, Eq)]
struct StoredTable {
    origin: usize,
    /// Site lines, each without its newline, back to back.
    text: String,
    /// `text[ends[i - 1]..ends[i]]` is site `i`.
    ends: Vec<usize>,
}

/// One site table of a [`SiteStore`].
#[derive(Debug, Clone, Copy)]
pub struct SiteTable<'s> {
    origin: &'s str,
    table: &'s StoredTable,
}

impl<'s> SiteTable<'s> {
    /// The file the table was loaded from.
    pub fn origin(&self) -> &'s str {
        self.origin
    }

    /// The number of sites.
    pub fn n_sites(&self) -> usize {
        self.table.ends.len()
    }

    /// The fields of site `index`, tab-separated, as the table has them.
    ///
    /// # Panics
    /// If `index` is not below [`n_sites`](Self::n_sites).
    pub fn site_text(&self, index: usize) -> &'s str {
        let start = if index == 0 {
            0
        } else {
            self.table.ends[index - 1]
        };
        &self.table.text[start..self.table.ends[index]]
    }
}

impl SiteStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store holding the tables of every file in `paths`; see
    /// [`load_path`](Self::load_path).
    pub fn from_paths(paths: &[impl AsRef<Path>]) -> Result<Self, LoadError> {
        let mut store = Self::new();
        for path in paths {
            store.load_path(path.as_ref())?;
        }
        Ok(store)
    }

    /// The number of (unit, scheme) tables held.
    pub fn n_tables(&self) -> usize {
        self.tables.len()
    }

    /// The table for `key`, if loaded.
    pub fn get(&self, key: &SectionKey) -> Option<SiteTable<'_>> {
        self.tables.get(key).map(|table| SiteTable {
            origin: &self.origins[table.origin],
            table,
        })
    }

    /// Loads `path`: a site table file, or an ELF binary, object or archive
    /// whose `.debug_site_info` sections hold the tables. A binary without
    /// any site table is an error; archive members without one are skipped,
    /// as static libraries may mix instrumented and other objects.
    pub fn load_path(&mut self, path: &Path) -> Result<(), LoadError> {
        let origin = path.display().to_string();
        let io_error = |source| LoadError::Io {
            origin: origin.clone(),
            source,
        };
        let mut input = BufReader::new(File::open(path).map_err(io_error)?);
        let head = input.fill_buf().map_err(io_error)?;
        let is_binary = head.starts_with(b"\x7fELF")
            || head.starts_with(b"!<arch>\n")
            || head.starts_with(b"!<thin>\n");
        if !is_binary {
            return self.load_text(&origin, input);
        }
        drop(input);
        let mut n_found = 0usize;
        for_each_section(
            path,
            SITE_INFO_SECTION,
            &mut |object, outcome| match outcome {
                Ok(SectionContents::Data(bytes)) => {
                    n_found += 1;
                    self.load_text(object, bytes.as_slice())
                }
                Ok(SectionContents::Missing | SectionContents::Empty) => Ok(()),
                Err(source) => Err(LoadError::Elf {
                    origin: object.to_owned(),
                    source,
                }),
            },
        )?;
        if n_found == 0 {
            return Err(LoadError::NoSiteInfo { origin });
        }
        for_each_section(
            path,
            SITE_SCALES_SECTION,
            &mut |object, outcome| match outcome {
                Ok(SectionContents::Data(bytes)) => {
                    let text = String::from_utf8_lossy(&bytes).replace('\0', "");
                    self.scales
                        .add_text(&text)
                        .map_err(|source| LoadError::Syntax {
                            origin: format!("{object} ({SITE_SCALES_SECTION})"),
                            source,
                        })
                }
                Ok(SectionContents::Missing | SectionContents::Empty) => Ok(()),
                Err(source) => Err(LoadError::Elf {
                    origin: object.to_owned(),
                    source,
                }),
            },
        )?;
        Ok(())
    }

    /// The scale site `site` of `key` was built with: 1 unless a binary
    /// recorded another in `.debug_site_scales`.
    pub fn scale(&self, key: &SectionKey, site: u32) -> u32 {
        self.scales.scale(key, site)
    }

    /// Loads the site table text `input`, naming it `origin` in messages
    /// and in the joined output.
    pub fn load_text(&mut self, origin: &str, input: impl BufRead) -> Result<(), LoadError> {
        let origin_index = self.origins.len();
        self.origins.push(origin.to_owned());
        let syntax = |source| LoadError::Syntax {
            origin: origin.to_owned(),
            source,
        };
        let mut reader = SiteTableReader::new(input);
        let mut current: Option<(SectionKey, StoredTable)> = None;
        while let Some(event) = reader.next_event().map_err(syntax)? {
            match event {
                SiteTableEvent::SectionStart(key) => {
                    current = Some((
                        key.clone(),
                        StoredTable {
                            origin: origin_index,
                            text: String::new(),
                            ends: Vec::new(),
                        },
                    ));
                }
                SiteTableEvent::Site(site) => {
                    if let Some((_, table)) = &mut current {
                        // Writing into a String cannot fail.
                        let _ = write!(table.text, "{site}");
                        table.ends.push(table.text.len());
                    }
                }
                SiteTableEvent::SectionEnd { .. } => {
                    if let Some((key, table)) = current.take() {
                        self.insert(key, table)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Adds a table. The same table found twice (an object linked twice,
    /// or a binary and the `.sites` file extracted from it) is kept once;
    /// two different tables under one key cannot both be right.
    fn insert(&mut self, key: SectionKey, table: StoredTable) -> Result<(), LoadError> {
        match self.tables.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert(table);
                Ok(())
            }
            Entry::Occupied(existing) => {
                let existing_table = existing.get();
                if existing_table.text == table.text && existing_table.ends == table.ends {
                    return Ok(());
                }
                Err(LoadError::Conflict {
                    key: existing.key().clone(),
                    first: self.origins[existing_table.origin].clone(),
                    second: self.origins[table.origin].clone(),
                    first_sites: existing_table.ends.len(),
                    second_sites: table.ends.len(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn keeps_site_text_and_origin() {
        let mut store = SiteStore::new();
        let text = format!(
            "<sites unit=\"{UNIT}\" scheme=\"branches\">\na.c\t1\tf\t0\tx > 1\na.c\t2\tf\t1\ty\n</sites>\n"
        );
        store.load_text("a.sites", text.as_bytes()).unwrap();
        let key = SectionKey::new(UNIT.parse().unwrap(), sampler_formats::Scheme::Branches);
        let table = store.get(&key).unwrap();
        assert_eq!(table.origin(), "a.sites");
        assert_eq!(table.n_sites(), 2);
        assert_eq!(table.site_text(0), "a.c\t1\tf\t0\tx > 1");
        assert_eq!(table.site_text(1), "a.c\t2\tf\t1\ty");
    }

    #[test]
    fn identical_duplicates_are_kept_once_and_conflicts_rejected() {
        let mut store = SiteStore::new();
        let text =
            format!("<sites unit=\"{UNIT}\" scheme=\"returns\">\na.c\t1\tf\t0\tg\n</sites>\n");
        store.load_text("one", text.as_bytes()).unwrap();
        store.load_text("two", text.as_bytes()).unwrap();
        assert_eq!(store.n_tables(), 1);
        let other = format!("<sites unit=\"{UNIT}\" scheme=\"returns\">\n</sites>\n");
        assert_eq!(
            store
                .load_text("three", other.as_bytes())
                .unwrap_err()
                .to_string(),
            format!(
                "unit `{UNIT}` scheme `returns`: `one` and `three` hold different site tables (1 and 0 sites) for the same unit signature"
            )
        );
    }
}
