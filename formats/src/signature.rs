//! Unit signatures: the 128-bit digest that names a compilation unit.

use std::fmt;
use std::str::FromStr;

/// The 128-bit signature of one compilation unit.
///
/// Together with the scheme name it joins a run's samples to the static site
/// table of the unit that produced them. In text it is always exactly 32
/// lowercase hexadecimal digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnitSignature([u8; 16]);

impl UnitSignature {
    /// The signature with these 16 bytes, most significant first.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The 16 bytes of the signature, most significant first.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

/// Why a text is not a [`UnitSignature`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a unit signature: expected 32 lowercase hexadecimal digits")]
pub struct SignatureError {
    text: String,
}

impl FromStr for UnitSignature {
    type Err = SignatureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || SignatureError {
            text: crate::error::quote(text).trim_matches('"').to_owned(),
        };
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(error());
        }
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks_exact(2)) {
            let high = hex_value(pair[0]).ok_or_else(error)?;
            let low = hex_value(pair[1]).ok_or_else(error)?;
            *byte = high << 4 | low;
        }
        Ok(Self(bytes))
    }
}

/// The value of one lowercase hexadecimal digit. Uppercase is refused: the
/// format is written lowercase, and accepting both would let two spellings
/// of one signature fail to join in tools that compare text.
fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for UnitSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for UnitSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UnitSignature({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_lowercase_hex() {
        let text = "0123456789abcdef00ff10e0d0c0b0a9";
        let signature: UnitSignature = text.parse().unwrap();
        assert_eq!(signature.as_bytes()[0], 0x01);
        assert_eq!(signature.as_bytes()[15], 0xa9);
        assert_eq!(signature.to_string(), text);
    }

    #[test]
    fn rejects_wrong_length_uppercase_and_non_hex() {
        for bad in [
            "",
            "0123456789abcdef00ff10e0d0c0b0a",
            "0123456789abcdef00ff10e0d0c0b0a90",
            "0123456789ABCDEF00ff10e0d0c0b0a9",
            "0123456789abcdeg00ff10e0d0c0b0a9",
            "é123456789abcdef00ff10e0d0c0b0a",
        ] {
            let error = bad.parse::<UnitSignature>().unwrap_err();
            assert!(
                error
                    .to_string()
                    .ends_with("expected 32 lowercase hexadecimal digits"),
                "{error}"
            );
        }
    }
}
