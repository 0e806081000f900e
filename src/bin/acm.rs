//! acm CLI
fn main() {}
