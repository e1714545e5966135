use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

/// A lexical token of the expression language.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Number(f64),
    Ident(String),
    Op(char),
}

pub struct Tokenizer<'a> {
    chars: Peekable<Chars<'a>>,
}

pub trait Spanned {
    fn span(&self) -> (usize, usize);
}

impl<'a> Tokenizer<'a> {
    /// Starts tokenizing `source`.
    pub fn new(source: &'a str) -> Self {
        Tokenizer { chars: source.chars().peekable() }
    }

    fn number(&mut self, first: char) -> Token {
        let mut text = first.to_string();
        while let Some(&c) = self.chars.peek() {
            if !c.is_ascii_digit() && c != '.' {
                break;
            }
            text.push(c);
            self.chars.next();
        }
        Token::Number(text.parse().unwrap_or(0.0))
    }
}

impl<'a> Iterator for Tokenizer<'a> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let c = self.chars.by_ref().find(|c| !c.is_whitespace())?;
        Some(match c {
            '0'..='9' => self.number(c),
            'a'..='z' | 'A'..='Z' => Token::Ident(c.to_string()),
            _ => Token::Op(c),
        })
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Number(n) => write!(f, "{n}"),
            Token::Ident(s) => write!(f, "{s}"),
            Token::Op(c) => write!(f, "{c}"),
        }
    }
}

pub mod tests_support {
    pub fn tokens(source: &str) -> Vec<super::Token> {
        super::Tokenizer::new(source).collect()
    }
}

macro_rules! op {
    ($c:expr) => {
        Token::Op($c)
    };
}
