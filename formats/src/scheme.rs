//! Instrumentation scheme names and what each scheme's lines hold.

use std::fmt;
use std::str::FromStr;

/// The name of an instrumentation scheme, as given to
/// `sampler-cc -fsampler-scheme=NAME`.
///
/// Names outside [`Scheme`] are accepted, so that tools built today still
/// join the tables and reports of a scheme added later: a name is one to 64
/// characters of lowercase ASCII letters, digits and `-`, starting with a
/// letter.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchemeName(Box<str>);

/// The schemes this version knows, with the layout of their site lines and
/// sample lines (`cbi-behaviour.md` §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// Shared-memory accesses (2 counters).
    Atoms,
    /// Read/write variant of `atoms` (2 counters).
    AtomsRw,
    /// Running minimum and maximum of assigned values.
    Bounds,
    /// Branch predicates: false, true.
    Branches,
    /// Values changed under the thread's feet (2 counters).
    CompareSwap,
    /// Statements executed (1 counter).
    Coverage,
    /// Memory accesses executed (1 counter).
    Data,
    /// Nine classes of floating-point values.
    FloatKinds,
    /// Functions entered (1 counter).
    FunctionEntries,
    /// Function re-entered while active: no, yes.
    FunReentries,
    /// `g_object_unref` reference counts: 0, 1, more, not an object.
    GObjectUnref,
    /// Call results: negative, zero, positive.
    Returns,
    /// Assigned value against another: less, equal, greater.
    ScalarPairs,
    /// Injected yields: no, yes.
    Yields,
}

/// What each line of a scheme's `<samples>` section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKind {
    /// This many unsigned counters; repeated sections are summed.
    Counters(usize),
    /// A minimum and a maximum; repeated sections take the min of minima and
    /// the max of maxima.
    Bounds,
}

/// The scheme-specific fields that follow the four common fields of a site
/// line (file, line, function, node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteLayout {
    /// No further field (`function-entries`).
    Plain,
    /// One C expression: a predicate, a callee, an argument, a statement.
    Expression,
    /// An lvalue and `read|write`.
    Access,
    /// An assigned lvalue, its host and its offset kind.
    Assignment,
    /// An assignment plus the other operand and its kind (`scalar-pairs`).
    Comparison,
}

impl SiteLayout {
    /// The number of scheme-specific fields.
    pub const fn n_fields(self) -> usize {
        match self {
            Self::Plain => 0,
            Self::Expression => 1,
            Self::Access => 2,
            Self::Assignment => 3,
            Self::Comparison => 5,
        }
    }
}

impl Scheme {
    /// Every known scheme.
    pub const ALL: [Scheme; 14] = [
        Scheme::Atoms,
        Scheme::AtomsRw,
        Scheme::Bounds,
        Scheme::Branches,
        Scheme::CompareSwap,
        Scheme::Coverage,
        Scheme::Data,
        Scheme::FloatKinds,
        Scheme::FunctionEntries,
        Scheme::FunReentries,
        Scheme::GObjectUnref,
        Scheme::Returns,
        Scheme::ScalarPairs,
        Scheme::Yields,
    ];

    /// The name used in flags, site tables and reports.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Atoms => "atoms",
            Self::AtomsRw => "atoms-rw",
            Self::Bounds => "bounds",
            Self::Branches => "branches",
            Self::CompareSwap => "compare-swap",
            Self::Coverage => "coverage",
            Self::Data => "data",
            Self::FloatKinds => "float-kinds",
            Self::FunctionEntries => "function-entries",
            Self::FunReentries => "fun-reentries",
            Self::GObjectUnref => "g-object-unref",
            Self::Returns => "returns",
            Self::ScalarPairs => "scalar-pairs",
            Self::Yields => "yields",
        }
    }

    /// The scheme with this name, if it is one this version knows.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scheme| scheme.name() == name)
    }

    /// What one line of this scheme's samples holds.
    pub const fn sample_kind(self) -> SampleKind {
        match self {
            Self::Bounds => SampleKind::Bounds,
            Self::Coverage | Self::Data | Self::FunctionEntries => SampleKind::Counters(1),
            Self::Atoms
            | Self::AtomsRw
            | Self::Branches
            | Self::CompareSwap
            | Self::FunReentries
            | Self::Yields => SampleKind::Counters(2),
            Self::Returns | Self::ScalarPairs => SampleKind::Counters(3),
            Self::GObjectUnref => SampleKind::Counters(4),
            Self::FloatKinds => SampleKind::Counters(9),
        }
    }

    /// The scheme-specific fields of this scheme's site lines.
    pub const fn site_layout(self) -> SiteLayout {
        match self {
            Self::FunctionEntries => SiteLayout::Plain,
            Self::Branches
            | Self::Returns
            | Self::Coverage
            | Self::GObjectUnref
            | Self::FunReentries
            | Self::Yields => SiteLayout::Expression,
            Self::Atoms | Self::AtomsRw | Self::CompareSwap | Self::Data => SiteLayout::Access,
            Self::Bounds | Self::FloatKinds => SiteLayout::Assignment,
            Self::ScalarPairs => SiteLayout::Comparison,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl SchemeName {
    /// The longest scheme name accepted.
    pub const MAX_LEN: usize = 64;

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The known scheme of this name, if any.
    pub fn scheme(&self) -> Option<Scheme> {
        Scheme::from_name(&self.0)
    }

    /// What one line of this scheme's samples holds; `None` for a scheme
    /// this version does not know, whose lines are counters of any arity.
    pub fn sample_kind(&self) -> Option<SampleKind> {
        self.scheme().map(Scheme::sample_kind)
    }
}

impl From<Scheme> for SchemeName {
    fn from(scheme: Scheme) -> Self {
        Self(scheme.name().into())
    }
}

/// Why a text is not a [`SchemeName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a scheme name: expected 1 to 64 lowercase letters, digits and `-`, starting with a letter"
)]
pub struct SchemeNameError {
    text: String,
}

impl FromStr for SchemeName {
    type Err = SchemeNameError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let valid = text.len() <= Self::MAX_LEN
            && text.starts_with(|c: char| c.is_ascii_lowercase())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if valid {
            Ok(Self(text.into()))
        } else {
            Err(SchemeNameError {
                text: crate::error::quote(text).trim_matches('"').to_owned(),
            })
        }
    }
}

impl fmt::Display for SchemeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SchemeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SchemeName({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_scheme_round_trips_through_its_name() {
        for scheme in Scheme::ALL {
            let name: SchemeName = scheme.name().parse().unwrap();
            assert_eq!(name.scheme(), Some(scheme));
            assert_eq!(SchemeName::from(scheme), name);
        }
    }

    #[test]
    fn arities_follow_cbi() {
        assert_eq!(Scheme::Branches.sample_kind(), SampleKind::Counters(2));
        assert_eq!(Scheme::Returns.sample_kind(), SampleKind::Counters(3));
        assert_eq!(Scheme::ScalarPairs.sample_kind(), SampleKind::Counters(3));
        assert_eq!(
            Scheme::FunctionEntries.sample_kind(),
            SampleKind::Counters(1)
        );
        assert_eq!(Scheme::FloatKinds.sample_kind(), SampleKind::Counters(9));
        assert_eq!(Scheme::GObjectUnref.sample_kind(), SampleKind::Counters(4));
        assert_eq!(Scheme::Atoms.sample_kind(), SampleKind::Counters(2));
        assert_eq!(Scheme::Bounds.sample_kind(), SampleKind::Bounds);
        assert_eq!(Scheme::ScalarPairs.site_layout().n_fields(), 5);
        assert_eq!(Scheme::Bounds.site_layout().n_fields(), 3);
    }

    #[test]
    fn unknown_names_are_accepted_but_unmodelled() {
        let name: SchemeName = "path-profiles2".parse().unwrap();
        assert_eq!(name.scheme(), None);
        assert_eq!(name.sample_kind(), None);
    }

    #[test]
    fn rejects_malformed_names() {
        for bad in ["", "Branches", "2x", "a b", "a\"b", &"a".repeat(65)] {
            assert!(bad.parse::<SchemeName>().is_err(), "{bad:?}");
        }
        assert_eq!(
            "A".parse::<SchemeName>().unwrap_err().to_string(),
            "`A` is not a scheme name: expected 1 to 64 lowercase letters, digits and `-`, starting with a letter"
        );
    }
}
