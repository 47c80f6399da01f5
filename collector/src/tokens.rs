//! Access tokens: `smp_<id>_<secret>`, one application and one scope each.
//!
//! The id (8 random bytes, hex) finds the row; the secret (24 random bytes,
//! hex) is kept only as its SHA-256, compared in constant time, so a copy
//! of the database gives no usable token and the comparison leaks nothing
//! of the stored hash through timing.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rand::RngExt;
use sha2::{Digest, Sha256};
use sqlx::Row;
use subtle::ConstantTimeEq;

use crate::store::{Store, now_ms};

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Upload runs and builds.
    Ingest,
    /// Read the API and the dashboard.
    Read,
}

impl Scope {
    /// The spelling in the database and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ingest => "ingest",
            Self::Read => "read",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "ingest" => Some(Self::Ingest),
            "read" => Some(Self::Read),
            _ => None,
        }
    }
}

/// A token that checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The token's id (its public half), the key of rate limits.
    pub token_id: String,
    /// The application it belongs to.
    pub application_id: i64,
    /// Its application's name.
    pub application: String,
    /// What it allows.
    pub scope: Scope,
}

/// Why a token was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header, or not of the token's shape.
    #[error("missing or malformed `Authorization: Bearer smp_...` header")]
    Missing,
    /// No such token, or the secret is wrong, or it was revoked.
    #[error("unknown token")]
    Unknown,
    /// The database could not be asked.
    #[error("the database is unavailable: {0}")]
    Database(#[from] sqlx::Error),
}

/// Creates a token for `application` (created if new) and returns it; the
/// only time the secret is ever seen.
pub async fn create(store: &Store, application: &str, scope: Scope) -> anyhow::Result<String> {
    let application_id = store.ensure_application(application).await?;
    let mut rng = rand::rng();
    let id = hex::encode(rng.random::<[u8; 8]>());
    let secret = hex::encode(rng.random::<[u8; 24]>());
    sqlx::query(
        "INSERT INTO tokens (id, application_id, scope, secret_sha256, created_ms) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&id)
    .bind(application_id)
    .bind(scope.as_str())
    .bind(Sha256::digest(secret.as_bytes()).to_vec())
    .bind(now_ms())
    .execute(&store.pool)
    .await?;
    Ok(format!("smp_{id}_{secret}"))
}

/// Revokes the token whose id (the part after `smp_`, or the whole token)
/// is `id`; returns whether one was revoked.
pub async fn revoke(store: &Store, id: &str) -> anyhow::Result<bool> {
    let id = split(id).map_or(id, |(id, _)| id);
    let revoked = sqlx::query("UPDATE tokens SET revoked = 1 WHERE id = $1 AND revoked = 0")
        .bind(id)
        .execute(&store.pool)
        .await?
        .rows_affected();
    Ok(revoked == 1)
}

/// Every token: id, application, scope, creation time, whether revoked.
pub async fn list(store: &Store) -> anyhow::Result<Vec<(String, String, String, i64, bool)>> {
    let rows = sqlx::query(
        "SELECT t.id, a.name, t.scope, t.created_ms, t.revoked FROM tokens t \
         JOIN applications a ON a.id = t.application_id ORDER BY a.name, t.created_ms",
    )
    .fetch_all(&store.pool)
    .await?;
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
                row.try_get::<i64, _>(4)? != 0,
            ))
        })
        .collect()
}

/// Splits `smp_<16 hex>_<48 hex>` into id and secret.
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix("smp_")?;
    let (id, secret) = rest.split_once('_')?;
    let hex = |text: &str, len| text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit());
    (hex(id, 16) && hex(secret, 48)).then_some((id, secret))
}

#[derive(Debug, Clone)]
struct Known {
    secret_sha256: Vec<u8>,
    grant: Grant,
    read_at: Instant,
}

/// How long a token read from the database is trusted without asking
/// again: a revocation reaches every running server within this time.
pub const TOKEN_CACHE_SECONDS: u64 = 30;

/// Checks tokens, remembering the rows it has read for
/// [`TOKEN_CACHE_SECONDS`]: an upload costs no query for its token once its
/// id was seen, and a revoked token stops working within that time.
#[derive(Debug, Clone, Default)]
pub struct TokenCache {
    known: Arc<RwLock<HashMap<String, Known>>>,
}

impl TokenCache {
    /// The grant of the bearer token in an `Authorization` header value.
    pub async fn check(
        &self,
        store: &Store,
        authorization: Option<&str>,
    ) -> Result<Grant, AuthError> {
        let token = authorization
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or(AuthError::Missing)?;
        let (id, secret) = split(token).ok_or(AuthError::Missing)?;
        let presented = Sha256::digest(secret.as_bytes());
        let cached = self
            .known
            .read()
            .expect("token cache poisoned")
            .get(id)
            .cloned();
        let fresh = Duration::from_secs(TOKEN_CACHE_SECONDS);
        let known = match cached {
            Some(known) if known.read_at.elapsed() < fresh => known,
            _ => {
                let row = sqlx::query(
                    "SELECT t.secret_sha256, t.application_id, t.scope, a.name FROM tokens t \
                     JOIN applications a ON a.id = t.application_id WHERE t.id = $1 AND t.revoked = 0",
                )
                .bind(id)
                .fetch_optional(&store.pool)
                .await?;
                let Some(row) = row else {
                    self.known.write().expect("token cache poisoned").remove(id);
                    return Err(AuthError::Unknown);
                };
                let scope: String = row.try_get(2)?;
                let known = Known {
                    secret_sha256: row.try_get(0)?,
                    grant: Grant {
                        token_id: id.to_owned(),
                        application_id: row.try_get(1)?,
                        application: row.try_get(3)?,
                        scope: Scope::parse(&scope).ok_or(AuthError::Unknown)?,
                    },
                    read_at: Instant::now(),
                };
                self.known
                    .write()
                    .expect("token cache poisoned")
                    .insert(id.to_owned(), known.clone());
                known
            }
        };
        if bool::from(known.secret_sha256.as_slice().ct_eq(&presented[..])) {
            Ok(known.grant)
        } else {
            Err(AuthError::Unknown)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_only_the_exact_shape() {
        let id = "0123456789abcdef";
        let secret = "a".repeat(48);
        assert_eq!(
            split(&format!("smp_{id}_{secret}")),
            Some((id, secret.as_str()))
        );
        assert_eq!(split(&format!("smp_{id}_{secret}0")), None);
        assert_eq!(split(&format!("smq_{id}_{secret}")), None);
        assert_eq!(split(&format!("smp_{id}x_{secret}")), None);
        assert_eq!(split(""), None);
    }
}
