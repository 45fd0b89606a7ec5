#include "parallel/collective_schedule.h"

#include <algorithm>

#include "core/enforce.h"

namespace doppio {
namespace {

std::string DescribeBlob(const std::string& blob, const std::map<std::string, TensorShape>& shapes) {
  auto known = shapes.find(blob);
  if (known == shapes.end() || known->second.unknown_shape()) return blob + " ?";
  const TensorShape& shape = known->second;
  std::string text = blob + " " + TensorProto::DataType_Name(shape.data_type()) + " (";
  for (int i = 0; i < shape.dims_size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape.dims(i));
  }
  return text + ")";
}

std::string Signature(const OperatorDef& op, const std::map<std::string, TensorShape>& shapes) {
  std::string text = op.type();
  if (!op.engine().empty()) text += " engine=" + op.engine();
  // Arguments in name order: a builder may add them in any order.
  std::vector<std::string> args;
  for (const Argument& arg : op.arg()) args.push_back(arg.ShortDebugString());
  std::sort(args.begin(), args.end());
  for (const std::string& arg : args) text += " {" + arg + "}";
  text += " [";
  for (int i = 1; i < op.input_size(); ++i) {
    if (i > 1) text += ", ";
    text += DescribeBlob(op.input(i), shapes);
  }
  return text + "]";
}

std::string Where(const NetDef& net, int index, const OperatorDef& op) {
  std::string where = "net '" + net.name() + "' op " + std::to_string(index);
  if (!op.name().empty()) where += " '" + op.name() + "'";
  return where;
}

std::string Describe(const std::vector<ScheduledCollective>& schedule, int index) {
  const ScheduledCollective& entry = schedule[index];
  return entry.signature + " (" + entry.where + ")";
}

}  // namespace

std::vector<ScheduledCollective> CollectiveSchedule(
    const std::vector<const NetDef*>& nets, const std::string& common_world,
    const std::map<std::string, TensorShape>& shapes) {
  std::vector<ScheduledCollective> schedule;
  for (const NetDef* net : nets) {
    for (int i = 0; i < net->op_size(); ++i) {
      const OperatorDef& op = net->op(i);
      if (op.input_size() == 0 || op.input(0) != common_world) continue;
      if (op.type() == "VerifyCollectiveSchedule") continue;
      schedule.push_back({Signature(op, shapes), Where(*net, i, op)});
    }
  }
  return schedule;
}

int FirstScheduleDifference(const std::vector<ScheduledCollective>& a,
                            const std::vector<ScheduledCollective>& b) {
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i) {
    if (a[i].signature != b[i].signature) return static_cast<int>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<int>(common);
}

std::string DescribeScheduleMismatch(int rank_a, const std::vector<ScheduledCollective>& a,
                                     int rank_b, const std::vector<ScheduledCollective>& b) {
  const int index = FirstScheduleDifference(a, b);
  DOPPIO_ENFORCE(index >= 0, "DescribeScheduleMismatch: the schedules are the same");
  auto side = [index](int rank, const std::vector<ScheduledCollective>& schedule) {
    if (index >= static_cast<int>(schedule.size())) {
      return MakeString("rank ", rank, " has no collective ", index, " (it has ",
                        schedule.size(), ")");
    }
    return MakeString("rank ", rank, ": ", Describe(schedule, index));
  };
  return MakeString("the ranks' collective schedules differ: ranks ", rank_a, " and ", rank_b,
                    " first disagree at collective ", index, " of ", a.size(), " / ", b.size(),
                    "; ", side(rank_a, a), "; ", side(rank_b, b),
                    ". Every rank must build the same model (layers, dtypes, bucket_cap_mb)");
}

uint64_t ScheduleDigest(const std::vector<ScheduledCollective>& schedule) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ull;
  };
  // Each signature after its length, so no two schedules share a byte stream.
  for (const ScheduledCollective& entry : schedule) {
    const uint64_t size = entry.signature.size();
    for (int shift = 0; shift < 64; shift += 8) mix(static_cast<unsigned char>(size >> shift));
    for (char c : entry.signature) mix(static_cast<unsigned char>(c));
  }
  return hash;
}

std::string EncodeSchedule(const std::vector<ScheduledCollective>& schedule) {
  // The check op's own arguments carry it: protobuf bytes, whatever the
  // blob names contain.
  std::string bytes;
  ScheduleCheckOp(schedule, "", DeviceOption()).SerializeToString(&bytes);
  return bytes;
}

std::vector<ScheduledCollective> DecodeSchedule(const std::string& bytes) {
  OperatorDef carrier;
  DOPPIO_ENFORCE(carrier.ParseFromString(bytes), "a collective schedule of ", bytes.size(),
                 " bytes is not a serialized schedule (EncodeSchedule)");
  return ScheduleOfCheckOp(carrier);
}

OperatorDef ScheduleCheckOp(const std::vector<ScheduledCollective>& schedule,
                            const std::string& common_world, const DeviceOption& device_option) {
  OperatorDef op;
  op.set_type("VerifyCollectiveSchedule");
  op.set_name("verify_collective_schedule");
  op.add_input(common_world);
  op.add_output(common_world);
  Argument* signatures = op.add_arg();
  signatures->set_name("schedule");
  Argument* places = op.add_arg();
  places->set_name("where");
  for (const ScheduledCollective& entry : schedule) {
    signatures->add_strings(entry.signature);
    places->add_strings(entry.where);
  }
  *op.mutable_device_option() = device_option;
  return op;
}

void InsertScheduleCheck(NetDef* init, const std::vector<const NetDef*>& nets,
                         const std::string& common_world,
                         const std::map<std::string, TensorShape>& shapes) {
  int create = -1;
  for (int i = 0; i < init->op_size(); ++i) {
    const OperatorDef& op = init->op(i);
    if (op.type() == "CreateCommonWorld" && op.output_size() == 1 &&
        op.output(0) == common_world) {
      create = i;
    }
  }
  DOPPIO_ENFORCE(create >= 0, "init net '", init->name(), "' has no CreateCommonWorld for '",
                 common_world, "' to check the collective schedule after");
  const DeviceOption device = init->op(create).device_option();
  const bool present = create + 1 < init->op_size() &&
                       init->op(create + 1).type() == "VerifyCollectiveSchedule";
  if (!present) {
    // A collective cannot come before the world is made, so the schedule
    // of the whole init net is what follows the check.
    init->mutable_op()->Add();
    for (int i = init->op_size() - 1; i > create + 1; --i) {
      init->mutable_op()->SwapElements(i, i - 1);
    }
  }
  std::vector<const NetDef*> all = {init};
  all.insert(all.end(), nets.begin(), nets.end());
  *init->mutable_op(create + 1) =
      ScheduleCheckOp(CollectiveSchedule(all, common_world, shapes), common_world, device);
}

std::vector<ScheduledCollective> ScheduleOfCheckOp(const OperatorDef& op) {
  const Argument* signatures = nullptr;
  const Argument* places = nullptr;
  for (const Argument& arg : op.arg()) {
    if (arg.name() == "schedule") signatures = &arg;
    if (arg.name() == "where") places = &arg;
  }
  std::vector<ScheduledCollective> schedule;
  if (signatures == nullptr) return schedule;
  DOPPIO_ENFORCE(places == nullptr || places->strings_size() == signatures->strings_size(),
                 "argument 'where' has ", places ? places->strings_size() : 0,
                 " entries but 'schedule' has ", signatures->strings_size(),
                 "; they must pair up");
  for (int i = 0; i < signatures->strings_size(); ++i) {
    schedule.push_back({signatures->strings(i),
                        places ? places->strings(i) : "collective " + std::to_string(i)});
  }
  return schedule;
}

}  // namespace doppio
