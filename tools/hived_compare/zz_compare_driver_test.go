package algorithm

// A driver (outside schedopt's repository) replaying allocate / release steps through the published HiveD
// algorithm and printing one JSON verdict per step. Input: $HIVED_CMP_IN (JSON), output: $HIVED_CMP_OUT.

import (
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"testing"

	"github.com/microsoft/hivedscheduler/pkg/api"
	"github.com/microsoft/hivedscheduler/pkg/common"
	"github.com/microsoft/hivedscheduler/pkg/internal"
	core "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type cmpOp struct {
	Op       string `json:"op"`
	Name     string `json:"name"`
	VC       string `json:"vc"`
	LeafType string `json:"leaf_type"`
	Gpus     int32  `json:"gpus"`
	Pods     int32  `json:"pods"`
	Priority int32  `json:"priority"`
	Pinned   string `json:"pinned"`
	Lazy     bool   `json:"lazy"`
}

type cmpCase struct {
	Config   string   `json:"config"`
	BadNodes []string `json:"bad_nodes"`
	Ops      []cmpOp  `json:"ops"`
}

type cmpStep struct {
	Name      string     `json:"name"`
	Verdict   string     `json:"verdict"`
	Reason    string     `json:"reason"`
	Preempted []string   `json:"preempted"`
	Pods      [][]string `json:"pods"`
}

func TestCompareDriver(t *testing.T) {
	in := os.Getenv("HIVED_CMP_IN")
	if in == "" {
		t.Skip("no HIVED_CMP_IN")
	}
	raw, _ := ioutil.ReadFile(in)
	var cases []cmpCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	var all [][]cmpStep
	for _, c := range cases {
		all = append(all, runCase(c))
	}
	out, _ := json.Marshal(all)
	ioutil.WriteFile(os.Getenv("HIVED_CMP_OUT"), out, 0644)
}

func runCase(c cmpCase) (steps []cmpStep) {
	defer func() {
		if r := recover(); r != nil {
			steps = append(steps, cmpStep{Verdict: "panic", Reason: fmt.Sprint(r)})
		}
	}()
	path := c.Config
	h := NewHivedAlgorithm(api.NewConfig(api.InitRawConfig(&path)))
	var nodes []string
	for _, ccl := range h.fullCellList {
		for _, cell := range ccl[CellLevel(len(ccl))] {
			ns, _ := cell.(*PhysicalCell).GetPhysicalPlacement()
			nodes = append(nodes, ns...)
		}
	}
	for _, n := range nodes {
		h.setHealthyNode(n)
	}
	for _, n := range c.BadNodes {
		h.setBadNode(n)
	}
	groups := map[string][]*core.Pod{} // allocated pods per group
	podGroup := map[string]string{}
	for _, op := range c.Ops {
		if op.Op == "release" {
			for _, p := range groups[op.Name] {
				h.DeleteAllocatedPod(p)
			}
			delete(groups, op.Name)
			continue
		}
		spec := &api.PodSchedulingSpec{
			VirtualCluster: api.VirtualClusterName(op.VC), Priority: op.Priority,
			PinnedCellId: api.PinnedCellId(op.Pinned), LeafCellType: op.LeafType, LeafCellNumber: op.Gpus,
			LazyPreemptionEnable: op.Lazy, IgnoreK8sSuggestedNodes: true,
			AffinityGroup: &api.AffinityGroupSpec{Name: op.Name,
				Members: []api.AffinityGroupMemberSpec{{PodNumber: op.Pods, LeafCellNumber: op.Gpus}}},
		}
		pods := make([]*core.Pod, op.Pods)
		for i := range pods {
			name := fmt.Sprintf("%v-%v", op.Name, i)
			pods[i] = &core.Pod{ObjectMeta: meta.ObjectMeta{Name: name, Namespace: "cmp", UID: types.UID(name),
				Annotations: map[string]string{api.AnnotationKeyPodSchedulingSpec: common.ToYaml(spec)}}}
			podGroup[name] = op.Name
		}
		step := cmpStep{Name: op.Name}
		func() {
			defer func() {
				if r := recover(); r != nil {
					step.Verdict, step.Reason = "error", fmt.Sprint(r)
				}
			}()
			psr := h.Schedule(pods[0], nodes, internal.PreemptingPhase)
			// a preemption names the victims on the current pod's node only: delete them, schedule again
			for round := 0; psr.PodPreemptInfo != nil && round < 64; round++ {
				victims := map[string]bool{}
				for _, v := range psr.PodPreemptInfo.VictimPods {
					victims[podGroup[v.Name]] = true
				}
				for g := range victims {
					for _, p := range groups[g] {
						h.DeleteAllocatedPod(p)
					}
					delete(groups, g)
					step.Preempted = append(step.Preempted, g)
				}
				psr = h.Schedule(pods[0], nodes, internal.PreemptingPhase)
			}
			if psr.PodBindInfo == nil {
				step.Verdict = "wait"
				if psr.PodWaitInfo != nil {
					step.Reason = psr.PodWaitInfo.Reason
				}
				return
			}
			step.Verdict = "bind"
			for i, p := range pods {
				if i > 0 {
					psr = h.Schedule(p, nodes, internal.PreemptingPhase)
				}
				bp := internal.NewBindingPod(p, psr.PodBindInfo)
				h.AddAllocatedPod(bp)
				groups[op.Name] = append(groups[op.Name], bp)
				step.Pods = append(step.Pods, []string{psr.PodBindInfo.Node, fmt.Sprint(psr.PodBindInfo.LeafCellIsolation)})
			}
		}()
		steps = append(steps, step)
	}
	return steps
}
