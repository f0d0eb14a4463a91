//! Static bearer tokens: a CSV file in kube-apiserver's `--token-auth-file` format,
//! `token,user,uid,"group1,group2"`, usually mounted from a Secret. The groups column is what
//! RBAC bindings to groups match ([`crate::authz`]).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::auth::{AuthError, Identity, TokenAuthenticator};

/// Static tokens and the identity each stands for.
pub struct StaticTokens {
    tokens: Vec<(String, Arc<Identity>)>,
}

impl StaticTokens {
    /// Parses the CSV text: `token,user[,uid[,groups]]` per line, where `groups` is one field
    /// (quoted when it holds several, comma-separated). Blank lines and `#` comments are
    /// skipped, so is a line without a token or a user.
    pub fn parse(text: &str) -> Self {
        let tokens = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| {
                let fields = split_csv_line(line);
                let mut fields = fields.iter().map(|f| f.trim());
                let token = fields.next().filter(|t| !t.is_empty())?;
                let user = fields.next().filter(|u| !u.is_empty())?;
                let uid = fields.next().filter(|u| !u.is_empty()).map(str::to_owned);
                let groups = fields
                    .next()
                    .into_iter()
                    .flat_map(|g| g.split(','))
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect();
                let identity = Identity {
                    uid,
                    groups,
                    ..Identity::user(user)
                };
                Some((token.to_owned(), Arc::new(identity)))
            })
            .collect();
        Self { tokens }
    }

    /// Reads and parses the token file at `path`.
    pub fn load(path: &str) -> Result<Self, AuthError> {
        let text = std::fs::read_to_string(path).map_err(|source| AuthError::ReadTokens {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self::parse(&text))
    }

    /// Number of tokens known.
    pub fn count(&self) -> usize {
        self.tokens.len()
    }
}

impl TokenAuthenticator for StaticTokens {
    fn authenticate<'a>(
        &'a self,
        token: &'a str,
    ) -> BoxFuture<'a, Result<Option<Arc<Identity>>, AuthError>> {
        // Compare against every token in constant time per token, so timing does not reveal
        // how much of a guess matched.
        let mut found = None;
        for (known, identity) in &self.tokens {
            if constant_time_eq(known.as_bytes(), token.as_bytes()) {
                found = Some(identity.clone());
            }
        }
        Box::pin(async move { Ok(found) })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Splits one CSV line into fields: commas separate fields outside double quotes, `""` inside
/// quotes is a literal quote.
fn split_csv_line(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn identity(tokens: &StaticTokens, token: &str) -> Option<Identity> {
        tokens
            .authenticate(token)
            .await
            .unwrap()
            .map(|i| (*i).clone())
    }

    #[tokio::test]
    async fn static_tokens_map_tokens_to_users() {
        let tokens =
            StaticTokens::parse("# comment\nsecret-a,alice,uid1\n\"secret-b\",\"bob\"\n,nobody\n");
        assert_eq!(tokens.count(), 2);
        let alice = identity(&tokens, "secret-a").await.unwrap();
        assert_eq!(
            (alice.user.as_str(), alice.uid.as_deref()),
            ("alice", Some("uid1"))
        );
        assert_eq!(identity(&tokens, "secret-b").await.unwrap().user, "bob");
        assert_eq!(identity(&tokens, "secret-").await, None);
    }

    #[tokio::test]
    async fn the_quoted_fourth_column_holds_the_groups() {
        let tokens =
            StaticTokens::parse("t1,carol,u3,\"callers, admins\"\nt2,dave,,ops\nt3,erin\n");
        let carol = identity(&tokens, "t1").await.unwrap();
        assert_eq!(carol.groups, ["callers", "admins"]);
        let dave = identity(&tokens, "t2").await.unwrap();
        assert_eq!((dave.uid, dave.groups), (None, vec!["ops".to_owned()]));
        assert!(identity(&tokens, "t3").await.unwrap().groups.is_empty());
    }
}
