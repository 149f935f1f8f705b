//! Unit tests of the app state (rates, sorting, filtering, the tree).
