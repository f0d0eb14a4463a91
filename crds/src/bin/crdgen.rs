//! Prints every CRD of the API as multi-document YAML on stdout (`make generate`).

fn main() {}
