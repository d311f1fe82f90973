"""What a compiled program writes into a buffer of a given shape (:func:`grader.measure.hlo.writes`),
on hand-written HLO in the form XLA:CPU prints: lesson 16's "in place" check reads it."""

from __future__ import annotations

from grader.measure import hlo

CACHE = (3, 2, 2, 48, 1, 4)

LOOP = """
HloModule step, input_output_alias={ {1}: (0, {}, may-alias) }

%fused_update (param_0: f32[3,2,2,48,1,4], param_1: s32[], param_2: f32[2,4]) -> f32[3,2,2,48,1,4] {
  %param_0 = f32[3,2,2,48,1,4]{5,4,3,2,1,0} parameter(0)
  %param_2 = f32[2,4]{1,0} parameter(2)
  %new = f32[1,2,2,1,1,4]{5,4,3,2,1,0} bitcast(%param_2)
  %param_1 = s32[] parameter(1)
  %zero = s32[] constant(0)
  %dus = f32[3,2,2,48,1,4]{5,4,3,2,1,0} dynamic-update-slice(%param_0, %new, %param_1, %zero, %zero, /*index=5*/%param_1, %zero, %zero)
  ROOT %flat = f32[3,2,2,48,4]{4,3,2,1,0} bitcast(%dus)
}

%body (p: (s32[], f32[3,2,2,48,4], f32[2,4])) -> (s32[], f32[3,2,2,48,4], f32[2,4]) {
  %p = (s32[], f32[3,2,2,48,4]{4,3,2,1,0}, f32[2,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %cache = f32[3,2,2,48,4]{4,3,2,1,0} get-tuple-element(%p), index=1
  %kv = f32[2,4]{1,0} get-tuple-element(%p), index=2
  %written = f32[3,2,2,48,4]{4,3,2,1,0} fusion(%cache, %i, %kv), kind=kLoop, calls=%fused_update
  ROOT %t = (s32[], f32[3,2,2,48,4]{4,3,2,1,0}, f32[2,4]{1,0}) tuple(%i, %written, %kv)
}

%cond (p: (s32[], f32[3,2,2,48,4], f32[2,4])) -> pred[] {
  %p = (s32[], f32[3,2,2,48,4]{4,3,2,1,0}, f32[2,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (kv: f32[2,4], cache: f32[3,2,2,48,1,4]) -> f32[3,2,2,48,1,4] {
  %kv = f32[2,4]{1,0} parameter(0)
  %cache = f32[3,2,2,48,1,4]{5,4,3,2,1,0} parameter(1)
  %kept = f32[3,2,2,48,1,4]{5,4,3,2,1,0} copy(%cache)
  %flat = f32[3,2,2,48,4]{4,3,2,1,0} bitcast(%cache)
  %zero = s32[] constant(0)
  %init = (s32[], f32[3,2,2,48,4]{4,3,2,1,0}, f32[2,4]{1,0}) tuple(%zero, %flat, %kv)
  %loop = (s32[], f32[3,2,2,48,4]{4,3,2,1,0}, f32[2,4]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %out = f32[3,2,2,48,4]{4,3,2,1,0} get-tuple-element(%loop), index=1
  %layer = f32[1,2,2,48,1,4]{5,4,3,2,1,0} slice(%kept), slice={[0:1], [0:2], [0:2], [0:48], [0:1], [0:4]}
  ROOT %result = f32[3,2,2,48,1,4]{5,4,3,2,1,0} bitcast(%out)
}
"""


def test_an_in_place_update_writes_its_update_and_a_copy_the_whole_buffer():
    found = {w.name: w for w in hlo.writes(LOOP, CACHE)}
    assert set(found) == {"written", "kept"}  # not the views, the loop, a layer's slice
    update = found["written"]
    assert (
        update.opcode == "dynamic-update-slice" and update.in_place
    )  # a root bitcast seen through
    assert update.written.startswith("f32[1,2,2,1,1,4]") and update.bytes_each == 64
    assert update.count == 3 and update.total() == 192  # once per layer: the loop's trip count
    copy = found["kept"]
    assert copy.opcode == "copy" and not copy.in_place
    assert copy.bytes_each == 3 * 2 * 2 * 48 * 4 * 4 and copy.count == 1


def test_a_buffer_of_other_dimensions_is_not_the_one_asked_for():
    """The same number of elements in other dimensions (a layer's keys repeated for the
    query heads, say) is another buffer; dimensions of size 1 do not count."""
    assert hlo.writes(LOOP, (3, 2, 2, 96, 2)) == []
    assert {w.name for w in hlo.writes(LOOP, (1, 3, 2, 2, 48, 4))} == {"written", "kept"}


def test_the_summary_keeps_the_text_it_was_read_from():
    assert hlo.summarize(LOOP).text == LOOP
