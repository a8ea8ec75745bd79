#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]
