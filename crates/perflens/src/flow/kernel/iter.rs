//! `Iter`, `TryIter` and `IntoIter` of a receiver with blocking `recv`
//! and `try_recv` (std's, crossbeam's and flume's), written once.

/// Defines `Iter`, `TryIter` and `IntoIter` over `$rx` (its field named
/// `$field`), `$rx::iter` and `$rx::try_iter`, and `IntoIterator` for
/// `$rx` and `&$rx`. `Debug` prints the receiver (`fields`) or nothing
/// (`opaque`), as the original's does.
macro_rules! receiver_iterators {
    ($rx:ident { $field:ident }, $debug:ident) => {
        /// [`Receiver::iter`]: blocks for each message.
        pub struct Iter<'a, T> {
            $field: &'a $rx<T>,
        }

        /// [`Receiver::try_iter`]: the messages already in the channel.
        pub struct TryIter<'a, T> {
            $field: &'a $rx<T>,
        }

        /// The owning iterator of a [`Receiver`].
        pub struct IntoIter<T> {
            $field: $rx<T>,
        }

        impl<T> $rx<T> {
            /// A blocking iterator over the messages, ending when every
            /// sender is gone and the channel is empty.
            pub fn iter(&self) -> Iter<'_, T> {
                Iter { $field: self }
            }

            /// An iterator over the messages already in the channel.
            pub fn try_iter(&self) -> TryIter<'_, T> {
                TryIter { $field: self }
            }
        }

        impl<T> Iterator for Iter<'_, T> {
            type Item = T;
            fn next(&mut self) -> Option<T> {
                self.$field.recv().ok()
            }
        }

        impl<T> Iterator for TryIter<'_, T> {
            type Item = T;
            fn next(&mut self) -> Option<T> {
                self.$field.try_recv().ok()
            }
        }

        impl<T> Iterator for IntoIter<T> {
            type Item = T;
            fn next(&mut self) -> Option<T> {
                self.$field.recv().ok()
            }
        }

        impl<'a, T> IntoIterator for &'a $rx<T> {
            type Item = T;
            type IntoIter = Iter<'a, T>;
            fn into_iter(self) -> Iter<'a, T> {
                self.iter()
            }
        }

        impl<T> IntoIterator for $rx<T> {
            type Item = T;
            type IntoIter = IntoIter<T>;
            fn into_iter(self) -> IntoIter<T> {
                IntoIter { $field: self }
            }
        }

        $crate::flow::kernel::receiver_iterators!(@debug $debug $field, Iter<'_>, TryIter<'_>, IntoIter);
    };
    (@debug fields $field:ident, $($it:ident $(<$lt:lifetime>)?),*) => {$(
        impl<T> ::std::fmt::Debug for $it<$($lt,)? T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($it))
                    .field(stringify!($field), &self.$field)
                    .finish()
            }
        }
    )*};
    (@debug opaque $field:ident, $($it:ident $(<$lt:lifetime>)?),*) => {
        $crate::flow::kernel::opaque_debug!($($it $(<$lt>)?),*);
    };
}
pub(crate) use receiver_iterators;
