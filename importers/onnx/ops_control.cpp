// Control flow: an If whose condition is a constant (folded shape arithmetic, an initializer, a
// Constant node) is replaced by the branch it takes, walked in the If's place; the other branch is
// never read. A Loop whose trip count and conditions are constants is unrolled: its body walked
// once per iteration. An If or Loop on data known only at run time is refused, naming it.
#include "importers/onnx/importer.hpp"

namespace rsim {

namespace onnx_detail {

namespace {

void if_node(Importer& im, const OpConverter&) {
  const Val& c = im.in(0);
  if (!c.has_data || c.data.size() != 1)
    im.node_fail("its condition is computed from data at run time; rsim folds an If only when its condition is a constant",
                 {Note{{}, "export the model with the condition fixed (e.g. torch.onnx.export of a traced model), or bind the inputs it depends on"}});
  const bool take = c.data[0] != 0;
  const onnx::AttributeProto* g = im.attr(take ? "then_branch" : "else_branch");
  if (!g || !g->has_g()) im.node_fail(std::string("has no ") + (take ? "then_branch" : "else_branch") + " graph");
  im.inline_graph(g->g());
}

void loop_node(Importer& im, const OpConverter&) {
  long long trips = -1;  // M, the trip count (optional)
  if (im.has_input(0)) {
    const Val& m = im.in(0);
    if (!m.has_data || m.data.size() != 1)
      im.node_fail("its trip count is computed from data at run time; rsim unrolls a Loop only when its trip count and condition are constants");
    trips = static_cast<long long>(m.data[0]);
  }
  bool cond = true;  // the first condition (optional)
  if (im.has_input(1)) {
    const Val& c = im.in(1);
    if (!c.has_data || c.data.size() != 1)
      im.node_fail("its condition is computed from data at run time; rsim unrolls a Loop only when its trip count and condition are constants");
    cond = c.data[0] != 0;
  }
  if (trips < 0 && !im.has_input(1)) im.node_fail("has neither a trip count nor a condition: it never ends");
  const onnx::AttributeProto* g = im.attr("body");
  if (!g || !g->has_g()) im.node_fail("has no body graph");
  im.unroll_loop(g->g(), trips, cond);
}

}  // namespace

const std::vector<OpConverter>& control_converters() {
  static const std::vector<OpConverter> v = {
      {"If", "the branch a constant condition takes, inlined", if_node},
      {"Loop", "its body unrolled, once per iteration (constant trip count and conditions)", loop_node},
  };
  return v;
}

}  // namespace onnx_detail

}  // namespace rsim
