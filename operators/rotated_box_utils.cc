#include "operators/rotated_box_utils.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace doppio {
namespace boxes {
namespace {

constexpr double kPi = 3.14159265358979323846;

struct Point {
  double x, y;
};

// The corners in order around the box. Caffe2 hands OpenCV's RotatedRect
// (clockwise angles) the negated angle; these are that rectangle's corners.
void Corners(const RotatedBox& box, Point out[4]) {
  const double theta = -box.angle * kPi / 180.0;
  const double b = std::cos(theta) * 0.5, a = std::sin(theta) * 0.5;
  out[0] = {box.cx - a * box.h - b * box.w, box.cy + b * box.h - a * box.w};
  out[1] = {box.cx + a * box.h - b * box.w, box.cy - b * box.h - a * box.w};
  out[2] = {2 * box.cx - out[0].x, 2 * box.cy - out[0].y};
  out[3] = {2 * box.cx - out[1].x, 2 * box.cy - out[1].y};
}

double Cross(const Point& o, const Point& a, const Point& b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

double SignedArea(const std::vector<Point>& polygon) {
  double area = 0;
  for (size_t i = 0; i < polygon.size(); ++i) {
    const Point& p = polygon[i];
    const Point& q = polygon[(i + 1) % polygon.size()];
    area += p.x * q.y - q.x * p.y;
  }
  return area / 2;
}

// The part of convex `polygon` on the inner side of edge a -> b of a
// counter-clockwise convex polygon (Sutherland-Hodgman, one edge).
std::vector<Point> ClipByEdge(const std::vector<Point>& polygon, const Point& a, const Point& b) {
  std::vector<Point> out;
  for (size_t i = 0; i < polygon.size(); ++i) {
    const Point& p = polygon[i];
    const Point& q = polygon[(i + 1) % polygon.size()];
    const double sp = Cross(a, b, p), sq = Cross(a, b, q);
    if (sp >= 0) out.push_back(p);
    if ((sp >= 0) != (sq >= 0)) {
      const double t = sp / (sp - sq);
      out.push_back({p.x + t * (q.x - p.x), p.y + t * (q.y - p.y)});
    }
  }
  return out;
}

}  // namespace

RotatedBox ApplyRotatedDeltas(const RotatedBox& box, const float* deltas, const float weights[4],
                              float clip, const AngleBound& bound) {
  const float dx = deltas[0] / weights[0];
  const float dy = deltas[1] / weights[1];
  const float dw = std::min(deltas[2] / weights[2], clip);
  const float dh = std::min(deltas[3] / weights[3], clip);
  const float da = static_cast<float>(deltas[4] * 180.0 / kPi);
  RotatedBox out{dx * box.w + box.cx, dy * box.h + box.cy, std::exp(dw) * box.w,
                 std::exp(dh) * box.h, da + box.angle};
  if (bound.on) {
    // One fold suffices: Caffe2's training targets keep |da| within half a period.
    const float period = static_cast<float>(bound.hi - bound.lo);
    if (out.angle < bound.lo) {
      out.angle += period;
    } else if (out.angle > bound.hi) {
      out.angle -= period;
    }
  }
  return out;
}

RotatedBox ClipRotatedToImage(const RotatedBox& box, float height, float width, float angle_thresh,
                              float plus_one) {
  if (!(std::fabs(box.angle) <= angle_thresh)) return box;
  const auto clip = [](float v, float hi) { return std::max(std::min(v, hi), 0.f); };
  const float x1 = clip(box.cx - (box.w - plus_one) / 2, width - plus_one);
  const float y1 = clip(box.cy - (box.h - plus_one) / 2, height - plus_one);
  const float x2 = clip(box.cx + (box.w - plus_one) / 2, width - plus_one);
  const float y2 = clip(box.cy + (box.h - plus_one) / 2, height - plus_one);
  return {(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1 + plus_one, y2 - y1 + plus_one, box.angle};
}

double RotatedIntersection(const RotatedBox& a, const RotatedBox& b) {
  Point pa[4], pb[4];
  Corners(a, pa);
  Corners(b, pb);
  std::vector<Point> shape(pa, pa + 4);
  std::vector<Point> window(pb, pb + 4);
  // Both counter-clockwise, so "inside" is the left of each edge.
  if (SignedArea(shape) < 0) std::reverse(shape.begin(), shape.end());
  if (SignedArea(window) < 0) std::reverse(window.begin(), window.end());
  for (size_t i = 0; i < window.size() && !shape.empty(); ++i) {
    shape = ClipByEdge(shape, window[i], window[(i + 1) % window.size()]);
  }
  return shape.size() < 3 ? 0.0 : std::fabs(SignedArea(shape));
}

float RotatedIou(const RotatedBox& a, const RotatedBox& b) {
  const double inter = RotatedIntersection(a, b);
  if (inter == 0.0) return 0.f;
  const double areas = static_cast<double>(a.w) * a.h + static_cast<double>(b.w) * b.h;
  return static_cast<float>(inter / (areas - inter));
}

}  // namespace boxes
}  // namespace doppio
