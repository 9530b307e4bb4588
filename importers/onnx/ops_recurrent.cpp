// Recurrent layers: ONNX LSTM, GRU and RNN become one `recurrent` layer each (every direction,
// layout 0 and 1), its weights W, R, B (and an LSTM's peepholes P) counted by the operator from
// the sizes (they match the initializers' elements). Sequence lengths shorter than the sequence
// are costed at its full length; initial states are read, not costed.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

void recurrent(Importer& im, const OpConverter& c) {
  const Val& x = im.in(0);
  const long long gates = c.op == "lstm" ? 4 : c.op == "gru" ? 3 : 1;
  if (x.shape.size() != 3) im.node_fail("X must have rank 3 ((seq, batch, input), or (batch, seq, input) with layout 1), got " + shape_text(x.shape));
  const std::string dir = im.attr_s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") im.node_fail("unknown direction '" + dir + "'");
  const long long dirs = dir == "bidirectional" ? 2 : 1, layout = im.attr_i("layout", 0);
  if (layout != 0 && layout != 1) im.node_fail("unknown layout " + std::to_string(layout));
  const Val& w = im.in(1);
  long long hidden = im.attr_i("hidden_size", 0);
  if (hidden <= 0 && w.shape.size() == 3) hidden = w.shape[1] / gates;
  if (hidden <= 0) im.node_fail("needs hidden_size (or W of shape (directions, " + std::to_string(gates) + " · hidden, input))");
  if (w.shape.size() != 3 || w.shape[0] != dirs || w.shape[1] != gates * hidden || w.shape[2] != x.shape[2])
    im.node_fail("W is " + shape_text(w.shape) + ", expected " + shape_text({dirs, gates * hidden, x.shape[2]}) + " (directions, " + std::to_string(gates) +
                 " · hidden, input)");
  LayerSpec l{"recurrent", {}, {im.ref(0)}};
  l.set("cell", scalar(c.op));
  l.set("hidden", int_node(hidden));
  l.set("bidirectional", bool_node(dirs == 2));
  l.set("batch_first", bool_node(layout == 1));
  l.set("bias", bool_node(im.has_input(3)));
  if (c.op == "lstm") l.set("peepholes", bool_node(im.has_input(7)));
  im.emit(l);
}

}  // namespace

const std::vector<OpConverter>& recurrent_converters() {
  static const std::vector<OpConverter> v = {
      {"LSTM", "recurrent (cell: lstm)", recurrent, "lstm"},
      {"GRU", "recurrent (cell: gru)", recurrent, "gru"},
      {"RNN", "recurrent (cell: rnn)", recurrent, "rnn"},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
