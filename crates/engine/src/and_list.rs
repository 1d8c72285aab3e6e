/// Names in a sentence: "a", "a and b", "a, b and c" (none: empty). One spelling for the CLI and
/// the exports, which name attempts set aside or rejected this way.
pub fn and_list<S: AsRef<str>>(names: &[S]) -> String {
    match names {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [before @ .., last] => format!("{} and {}", before.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", "), last.as_ref()),
    }
}

#[cfg(test)]
mod tests {
    use super::and_list;

    #[test]
    fn names_are_joined_by_commas_with_and_before_the_last() {
        assert_eq!(and_list::<&str>(&[]), "");
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b"]), "a and b");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
    }
}
