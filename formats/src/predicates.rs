//! The predicates of each scheme's sites (analysis-and-collection.md §A.1).
//!
//! Every observation of a counter site bumps exactly one of its slots, so a
//! site was *observed* in a run when any slot is non-zero, and a predicate,
//! being a set of slots, was *true* when any of its slots is non-zero:
//!
//! | scheme | slots | predicates |
//! |---|---|---|
//! | `branches` | false, true | `!(C)`, `C` |
//! | `returns` | < 0, == 0, > 0 | `f() < 0`, `<= 0`, `> 0`, `>= 0`, `== 0`, `!= 0` |
//! | `scalar-pairs` | <, ==, > | `x < y`, `<=`, `>`, `>=`, `==`, `!=` |
//! | `float-kinds` | nine classes | `x is -Inf`, ... one per class |
//! | `g-object-unref` | four classes | one per class |
//! | `atoms` | same thread, other thread | one per slot |
//! | `function-entries` | entered | `f() reached` |
//!
//! `bounds` sites record a range, not events: nothing of theirs is a
//! predicate a run makes true or false, so they are not ranked (the
//! dashboard may show their ranges). Unknown schemes get one predicate per
//! slot, named by slot number.

/// One predicate of a site: the slots that make it true, and its C text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PredicateShape {
    /// Bit i set: slot i counts towards the predicate.
    pub slots: u16,
    /// How to write it, given the site's fields.
    pub text: Text,
}

/// How a predicate is written from its site's scheme fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    /// The branch condition.
    Condition,
    /// The branch condition, negated.
    NotCondition,
    /// `callee() OP 0`.
    Return(&'static str),
    /// `lvalue OP other`.
    Pair(&'static str),
    /// `lvalue is CLASS`.
    FloatKind(&'static str),
    /// `g_object_unref(ARG): CLASS`.
    Unref(&'static str),
    /// `LVALUE (read|write): CLASS`.
    Atom(&'static str),
    /// `FUNCTION() reached`.
    Reached,
    /// `slot N` of an unknown scheme.
    Slot(usize),
}

const RELATIONS: [(&str, u16); 6] = [
    ("<", 0b001),
    ("<=", 0b011),
    (">", 0b100),
    (">=", 0b110),
    ("==", 0b010),
    ("!=", 0b101),
];

const FLOAT_KINDS: [&str; 9] = [
    "-Inf",
    "negative normal",
    "negative subnormal",
    "-0",
    "NaN",
    "+0",
    "positive subnormal",
    "positive normal",
    "+Inf",
];

const UNREF_KINDS: [&str; 4] = [
    "ref_count 0",
    "ref_count 1",
    "ref_count > 1",
    "not a GObject",
];

const ATOM_KINDS: [&str; 2] = [
    "last access by the same thread",
    "last access by another thread",
];

/// The three basic relations of `returns` and `scalar-pairs` slots.
const SLOT_RELATIONS: [&str; 3] = ["<", "==", ">"];

/// The text of what one slot of a site records, as the predicate made of
/// that slot alone is written (`resolve-trace` names each observation so):
/// `bounds` as `LVALUE assigned`, the slots of unknown schemes as
/// `FIELDS slot N`.
pub fn slot_text(scheme: &str, slot: u16, fields: &[&str], function: &str) -> String {
    let field = |index: usize| fields.get(index).copied().unwrap_or("?");
    let slot_index = usize::from(slot);
    match (scheme, slot_index) {
        ("branches", 0) => format!("!({})", field(0)),
        ("branches", 1) => field(0).to_owned(),
        ("returns", 0..=2) => format!("{}() {} 0", field(0), SLOT_RELATIONS[slot_index]),
        // scalar-pairs fields: lvalue, host, offset, other, other kind.
        ("scalar-pairs", 0..=2) => {
            format!("{} {} {}", field(0), SLOT_RELATIONS[slot_index], field(3))
        }
        ("float-kinds", 0..=8) => format!("{} is {}", field(0), FLOAT_KINDS[slot_index]),
        ("g-object-unref", 0..=3) => {
            format!("g_object_unref({}): {}", field(0), UNREF_KINDS[slot_index])
        }
        ("atoms", 0..=1) => format!("{} ({}): {}", field(0), field(1), ATOM_KINDS[slot_index]),
        ("function-entries", 0) => format!("{function}() reached"),
        ("bounds", _) => format!("{} assigned", field(0)),
        _ => format!("{} slot {slot}", fields.join(" ")),
    }
}

/// The predicates of a site of `scheme` with `arity` slots.
pub fn shapes(scheme: &str, arity: usize) -> Vec<PredicateShape> {
    let per_slot = |text: fn(usize) -> Text| {
        (0..arity.min(16))
            .map(|slot| PredicateShape {
                slots: 1 << slot,
                text: text(slot),
            })
            .collect()
    };
    match (scheme, arity) {
        ("branches", 2) => vec![
            PredicateShape {
                slots: 0b01,
                text: Text::NotCondition,
            },
            PredicateShape {
                slots: 0b10,
                text: Text::Condition,
            },
        ],
        ("returns", 3) => RELATIONS
            .iter()
            .map(|&(op, slots)| PredicateShape {
                slots,
                text: Text::Return(op),
            })
            .collect(),
        ("scalar-pairs", 3) => RELATIONS
            .iter()
            .map(|&(op, slots)| PredicateShape {
                slots,
                text: Text::Pair(op),
            })
            .collect(),
        ("float-kinds", 9) => per_slot(|slot| Text::FloatKind(FLOAT_KINDS[slot])),
        ("g-object-unref", 4) => per_slot(|slot| Text::Unref(UNREF_KINDS[slot])),
        ("atoms", 2) => per_slot(|slot| Text::Atom(ATOM_KINDS[slot])),
        ("function-entries", 1) => vec![PredicateShape {
            slots: 1,
            text: Text::Reached,
        }],
        ("bounds", _) => Vec::new(),
        _ => per_slot(Text::Slot),
    }
}

/// Whether the predicate of `slots` held, given a site's counters.
pub fn holds(slots: u16, counters: &[u64]) -> bool {
    counters
        .iter()
        .enumerate()
        .any(|(slot, &count)| count != 0 && slot < 16 && slots & (1 << slot) != 0)
}

impl Text {
    /// The predicate as C-like text, from the site's scheme fields (the
    /// fields after file, line, function and statement number) and its
    /// function.
    pub fn render(&self, fields: &[&str], function: &str) -> String {
        let field = |i: usize| fields.get(i).copied().unwrap_or("?");
        match self {
            Self::Condition => field(0).to_owned(),
            Self::NotCondition => format!("!({})", field(0)),
            Self::Return(op) => format!("{}() {op} 0", field(0)),
            // scalar-pairs fields: lvalue, host, offset, other, other kind.
            Self::Pair(op) => format!("{} {op} {}", field(0), field(3)),
            Self::FloatKind(kind) => format!("{} is {kind}", field(0)),
            Self::Unref(kind) => format!("g_object_unref({}): {kind}", field(0)),
            Self::Atom(kind) => format!("{} ({}): {kind}", field(0), field(1)),
            Self::Reached => format!("{function}() reached"),
            Self::Slot(slot) => format!("{} slot {slot}", fields.join(" ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_relations_follow_the_three_counters() {
        let shapes = shapes("returns", 3);
        let texts: Vec<String> = shapes
            .iter()
            .map(|s| s.text.render(&["fopen"], "main"))
            .collect();
        assert_eq!(
            texts,
            [
                "fopen() < 0",
                "fopen() <= 0",
                "fopen() > 0",
                "fopen() >= 0",
                "fopen() == 0",
                "fopen() != 0"
            ]
        );
        // Only zero returns seen: <=, >=, == hold; <, >, != do not.
        let held: Vec<bool> = shapes.iter().map(|s| holds(s.slots, &[0, 4, 0])).collect();
        assert_eq!(held, [false, true, false, true, true, false]);
        let held: Vec<bool> = shapes.iter().map(|s| holds(s.slots, &[1, 0, 2])).collect();
        assert_eq!(held, [true, true, true, true, false, true]);
    }

    #[test]
    fn each_scheme_has_its_predicates() {
        let texts = |scheme: &str, arity, fields: &[&str]| -> Vec<String> {
            shapes(scheme, arity)
                .iter()
                .map(|s| s.text.render(fields, "parse"))
                .collect()
        };
        assert_eq!(
            texts("branches", 2, &["len > cap"]),
            ["!(len > cap)", "len > cap"]
        );
        assert_eq!(
            texts(
                "scalar-pairs",
                3,
                &["n", "local", "direct", "limit", "local-init"]
            )[1],
            "n <= limit"
        );
        assert_eq!(texts("function-entries", 1, &[]), ["parse() reached"]);
        assert_eq!(
            texts("float-kinds", 9, &["x", "local", "direct"])[4],
            "x is NaN"
        );
        assert_eq!(
            texts("g-object-unref", 4, &["obj"])[1],
            "g_object_unref(obj): ref_count 1"
        );
        assert_eq!(
            texts("atoms", 2, &["*p", "write"])[1],
            "*p (write): last access by another thread"
        );
        assert!(shapes("bounds", 2).is_empty());
        assert_eq!(texts("yields", 2, &["x"]), ["x slot 0", "x slot 1"]);
    }
}
