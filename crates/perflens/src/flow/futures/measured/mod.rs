//! The measured endpoints of `futures-channel` (feature `flow-futures`
//! with `enabled`): `mpsc` and `oneshot`.

use crate::flow::kernel::{ReceiverCount, SenderCount, Wait, delegate, opaque_debug, pair, polled};
use crate::flow::{Envelope, Wrap};
use ::std::fmt;
use ::std::future::Future;
use ::std::pin::Pin;
use ::std::task::{Context, Poll};
use perflens_core::FlowSite;

pub mod mpsc;
pub mod oneshot;
