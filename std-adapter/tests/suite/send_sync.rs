//! Compile-time checks of the thread-safety guarantees stated in `docs/concurrency.md`:
//! if a type loses `Send` or `Sync`, this file stops compiling.

#![allow(dead_code)]

use simak::ev74::runtime::{
    Completion, DeviceBuffer, Executor, Mapping, Retire, SimTransport, Transport,
};
use simak::state::{Bound, Encoded};
use simak::{a65, ev74, ops};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

#[test]
fn plans_are_send_and_sync() {
    assert_send_sync::<ops::quant::Plan>();
    assert_send_sync::<ops::casttess::Plan>();
    assert_send_sync::<ops::quanttess::Plan>();
    assert_send_sync::<ops::quant::Params>();
    assert_send_sync::<ops::quant::CheckedParams>();
    assert_send_sync::<ops::detess::Plan>();
    assert_send_sync::<ops::detesscast::Plan>();
    assert_send_sync::<ops::detessdequant::Plan>();
    assert_send_sync::<ops::dequant::Plan>();
}

#[test]
fn prepared_plans_and_pieces_are_send_and_sync() {
    assert_send_sync::<a65::quant::Prepared>();
    assert_send_sync::<a65::casttess::Prepared>();
    assert_send_sync::<a65::quanttess::Prepared>();
    assert_send_sync::<a65::quant::Piece<'static>>();
    assert_send_sync::<a65::casttess::Piece<'static>>();
    assert_send_sync::<a65::quanttess::Piece<'static>>();
    assert_send_sync::<a65::detess::Prepared>();
    assert_send_sync::<a65::detesscast::Prepared>();
    assert_send_sync::<a65::detessdequant::Prepared>();
    assert_send_sync::<a65::dequant::Prepared>();
    assert_send_sync::<a65::detess::Piece<'static>>();
    assert_send_sync::<a65::detesscast::Piece<'static>>();
    assert_send_sync::<a65::detessdequant::Piece<'static>>();
    assert_send_sync::<a65::dequant::Piece<'static>>();
}

#[test]
fn device_plans_and_packets_are_send_and_sync() {
    assert_send_sync::<ev74::quant::DevicePlan>();
    assert_send_sync::<ev74::quant::Packet<Encoded>>();
    assert_send_sync::<ev74::quant::Packet<Bound>>();
    assert_send_sync::<ev74::casttess::DevicePlan>();
    assert_send_sync::<ev74::casttess::Packet<Encoded>>();
    assert_send_sync::<ev74::casttess::Packet<Bound>>();
    assert_send_sync::<ev74::DeviceRegion>();
}

#[test]
fn runtime_handles_are_send_and_sync() {
    assert_send_sync::<Executor>();
    assert_send_sync::<DeviceBuffer>();
    assert_send_sync::<Completion>();
    assert_send_sync::<Mapping<'static>>();
    assert_send_sync::<SimTransport>();
    assert_send_sync::<std::sync::Arc<dyn Transport>>();
    assert_send::<Retire>();
}
