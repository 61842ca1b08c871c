// Validates dynprof's Kubernetes manifests offline.
//
//   node validate.mjs [--facts FACTS.json] FILE.yaml...
//
// 1. Every document parses and validates against the Kubernetes API schemas
//    (kubernetes-models), and has no field the API does not know (kubectl's strict
//    field validation: a misspelt field is silently dropped by old API servers).
// 2. With --facts (written by tests/deploy/test_deploy_k8s.sh from the real binaries and
//    sources): the manifests use only flags the binaries accept and DYNPROF_*
//    variables something reads; the trainer's socket and segment directory are the
//    agent's, through the same volume; agents reach a Service port that is the
//    coordinator's --listen port; probes hit the --http port; token files come from
//    Secret keys that exist, keys and certificates (--tls-*) from Secrets; ConfigMap
//    files equal their sources.
// Prints one line per problem and exits 1 if there was any.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));
const modroot = path.join(here, "node_modules");
const problems = [];

function problem(where, msg) {
	problems.push(`${where}: ${msg}`);
}

// ---- the API's field names, from kubernetes-models' type declarations ----

const types = new Map();	// IIoK8s... -> Map(field -> type text)

function loadTypes(dir) {
	for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
		const p = path.join(dir, ent.name);
		if (ent.isDirectory()) {
			if (ent.name !== "node_modules" && ent.name !== "_schemas")
				loadTypes(p);
			continue;
		}
		if (!ent.name.endsWith(".d.ts"))
			continue;
		const text = fs.readFileSync(p, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
		const aliases = new Map();
		for (const m of text.matchAll(/\b(I\w+) as (IIo\w+)/g))
			aliases.set(m[1], m[2]);
		for (const m of text.matchAll(/export interface (I\w+)(?: extends [\w, ]+)? \{\n([\s\S]*?)\n\}/g)) {
			const name = aliases.get(m[1]);
			if (!name)
				continue;
			const fields = new Map();
			for (const chunk of m[2].split(/\n(?=    ")/)) {
				const f = chunk.match(/^\s*"([^"]+)"\??: ([\s\S]*)$/);
				if (f)
					fields.set(f[1], f[2].trim().replace(/;$/, ""));
			}
			types.set(name, fields);
		}
	}
}

function closest(word, words) {
	let best = null, bestd = 3;
	for (const w of words) {
		const d = distance(word.toLowerCase(), w.toLowerCase());
		if (d < bestd) {
			best = w;
			bestd = d;
		}
	}
	return best;
}

function distance(a, b) {
	const d = Array.from({ length: a.length + 1 }, (_, i) => [i]);
	for (let j = 1; j <= b.length; j++)
		d[0][j] = j;
	for (let i = 1; i <= a.length; i++)
		for (let j = 1; j <= b.length; j++)
			d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1,
			    d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
	return d[a.length][b.length];
}

function strict(obj, type, where) {
	const fields = types.get(type);
	if (!fields || obj === null || typeof obj !== "object" || Array.isArray(obj))
		return;
	for (const [k, v] of Object.entries(obj)) {
		const t = fields.get(k);
		if (t === undefined) {
			const hint = closest(k, fields.keys());
			problem(`${where}.${k}`, "unknown field" +
			    (hint ? ` (did you mean "${hint}"?)` : ""));
			continue;
		}
		let m;
		if ((m = t.match(/^Array<(IIo\w+)>/))) {
			if (Array.isArray(v))
				v.forEach((e, i) => strict(e, m[1], `${where}.${k}[${i}]`));
		} else if ((m = t.match(/^\{\s*\[key: string\]: (IIo\w+)/))) {
			if (v && typeof v === "object")
				for (const [mk, mv] of Object.entries(v))
					strict(mv, m[1], `${where}.${k}.${mk}`);
		} else if ((m = t.match(/^(IIo\w+)$/))) {
			strict(v, m[1], `${where}.${k}`);
		}
	}
}

async function schemaCheck(doc, where) {
	const { apiVersion, kind } = doc;
	if (typeof apiVersion !== "string" || typeof kind !== "string") {
		problem(where, "no apiVersion or kind");
		return false;
	}
	const file = path.join(modroot, "kubernetes-models", apiVersion, `${kind}.mjs`);
	if (!/^[\w.\/-]+$/.test(apiVersion) || !/^\w+$/.test(kind) || !fs.existsSync(file)) {
		problem(where, `unknown kind ${apiVersion} ${kind}`);
		return false;
	}
	const mod = await import(pathToFileURL(file).href);
	try {
		new mod[kind](doc).validate();
	} catch (e) {
		problem(where, `schema: ${e.message}`);
	}
	const dts = fs.readFileSync(file.replace(/\.mjs$/, ".d.ts"), "utf8");
	const m = dts.match(new RegExp(`\\bI${kind} as (IIo\\w+)`));
	if (m)
		strict(doc, m[1], `${where} ${kind}/${doc.metadata?.name ?? "?"}`);
	else
		problem(where, `no type declaration for ${kind}`);
	return true;
}

// ---- consistency with what the binaries read ----

const BINARIES = ["dynprof-agent", "dynprof-coordinator", "dynprofctl"];

function podSpecOf(doc) {
	switch (doc.kind) {
	case "Pod":
		return doc.spec;
	case "Deployment": case "DaemonSet": case "StatefulSet": case "Job": case "ReplicaSet":
		return doc.spec?.template?.spec;
	case "CronJob":
		return doc.spec?.jobTemplate?.spec?.template?.spec;
	default:
		return null;
	}
}

function binaryOf(c) {
	const argv = [...(c.command ?? []), ...(c.args ?? [])];
	for (const a of argv.slice(0, 2))
		if (BINARIES.includes(path.posix.basename(String(a))))
			return path.posix.basename(String(a));
	return null;
}

// $(VAR) in args, as the kubelet expands them.
function expand(s, env) {
	return String(s).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, n) =>
	    env.has(n) ? env.get(n) : all);
}

function envOf(c) {
	const env = new Map();
	for (const e of c.env ?? [])
		env.set(e.name, e.value !== undefined ? String(e.value) :
		    e.valueFrom?.fieldRef ? `<field:${e.valueFrom.fieldRef.fieldPath}>` :
		    "<ref>");
	return env;
}

// Flags as the binary parses them: "--name value" or "--name=value".
function flagsOf(argv, known, where, bin) {
	const flags = new Map();
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (!a.startsWith("--"))
			continue;
		let name = a.slice(2), value;
		const eq = name.indexOf("=");
		if (eq >= 0) {
			value = name.slice(eq + 1);
			name = name.slice(0, eq);
		}
		if (!known.has(name)) {
			problem(where, `${bin} has no flag --${name}`);
			continue;
		}
		if (known.get(name) && value === undefined)
			value = argv[++i];
		flags.set(name, value ?? true);
	}
	return flags;
}

// Where a container path really lives: a hostPath on the node, an emptyDir of the
// pod, a Secret key, or the container's own filesystem.
function locate(p, c, spec, podId) {
	p = path.posix.normalize(p);
	let best = null;
	for (const vm of c.volumeMounts ?? []) {
		const mp = path.posix.normalize(vm.mountPath);
		if ((p === mp || p.startsWith(mp.endsWith("/") ? mp : mp + "/")) &&
		    (!best || mp.length > best.mp.length))
			best = { mp, vm };
	}
	if (!best)
		return { kind: "container", key: `${podId}/${c.name}:${p}` };
	const rest = path.posix.relative(best.mp, p);
	const vol = (spec.volumes ?? []).find((v) => v.name === best.vm.name);
	if (!vol)
		return { kind: "missing", key: best.vm.name };
	if (vol.hostPath)
		return { kind: "host", vol, key: "host:" + path.posix.join(vol.hostPath.path, rest) };
	if (vol.emptyDir)
		return { kind: "emptyDir", vol, key: `${podId}/${vol.name}:` + rest };
	if (vol.secret) {
		const item = (vol.secret.items ?? []).find((it) => it.path === rest);
		return { kind: "secret", vol, key: item ? item.key : rest,
		    secret: vol.secret.secretName };
	}
	if (vol.configMap)
		return { kind: "configMap", vol, key: rest, name: vol.configMap.name };
	return { kind: "other", vol, key: `${podId}/${vol.name}:` + rest };
}

function consistency(all, facts, cfiles) {
	const flagSets = new Map();
	for (const [bin, flags] of Object.entries(facts.flags))
		flagSets.set(bin, new Map(Object.entries(flags)));
	const envNames = new Set(facts.env);
	const secrets = new Map();	// namespace/name -> data keys
	const services = [];
	const pods = [];

	for (const { doc, where } of all) {
		const ns = doc.metadata?.namespace ?? "default";
		if (doc.kind === "Secret")
			secrets.set(`${ns}/${doc.metadata.name}`,
			    { keys: new Set([...Object.keys(doc.data ?? {}),
				...Object.keys(doc.stringData ?? {})]), doc });
		if (doc.kind === "Service")
			services.push({ doc, ns });
		if (doc.kind === "ConfigMap")
			for (const [k, v] of Object.entries(doc.data ?? {})) {
				const src = cfiles[`${doc.metadata.name}/${k}`];
				if (src && fs.readFileSync(src, "utf8") !== v)
					problem(where, `ConfigMap ${doc.metadata.name} key ${k} differs from ${src}`);
			}
		const spec = podSpecOf(doc);
		if (spec)
			pods.push({ doc, spec, ns, where,
			    podId: `${ns}/${doc.kind}/${doc.metadata?.name}` });
	}

	const agents = [];		// { pod, c, socket, shm }
	const trainers = [];
	const coordinators = [];
	for (const pod of pods) {
		const containers = [...(pod.spec.initContainers ?? []),
		    ...(pod.spec.containers ?? [])];
		for (const c of containers) {
			const where = `${pod.where} ${pod.doc.kind}/${pod.doc.metadata?.name} container ${c.name}`;
			const env = envOf(c);
			for (const n of env.keys())
				if (/^(DYNPROF|SLURM)_/.test(n) && !envNames.has(n))
					problem(where, `env ${n}: read by no dynprof binary or library`);
			for (const vm of c.volumeMounts ?? [])
				if (!(pod.spec.volumes ?? []).some((v) => v.name === vm.name))
					problem(where, `volumeMount ${vm.name}: no such volume`);
			const bin = binaryOf(c);
			const argv = [...(c.command ?? []), ...(c.args ?? [])].map((a) => expand(a, env));
			for (const a of argv)
				for (const m of String(a).matchAll(/\$\(([A-Za-z_]\w*)\)/g))
					problem(where, `$(${m[1]}) is not an env variable of the container`);
			if (bin) {
				const flags = flagsOf(argv, flagSets.get(bin), where, bin);
				const tok = bin === "dynprof-agent" ? ["token-file"] :
				    bin === "dynprof-coordinator" ? ["agent-token-file", "admin-token-file",
				    "viewer-token-file"] : [];
				for (const t of tok)
					if (typeof flags.get(t) === "string") {
						const loc = locate(flags.get(t), c, pod.spec, pod.podId);
						if (loc.kind !== "secret")
							problem(where, `--${t} ${flags.get(t)} is not on a Secret volume`);
						else {
							const s = secrets.get(`${pod.ns}/${loc.secret}`);
							if (!s)
								problem(where, `--${t}: Secret ${loc.secret} not in namespace ${pod.ns}`);
							else if (!s.keys.has(loc.key))
								problem(where, `--${t}: Secret ${loc.secret} has no key ${loc.key}`);
						}
					}
				// Keys and certificates come from Secrets too; a Secret made
				// with kubectl (not in these files) cannot be checked further.
				for (const t of ["tls-cert", "tls-key", "tls-ca", "http-tls-cert",
				    "http-tls-key", "http-tls-ca"])
					if (typeof flags.get(t) === "string") {
						const loc = locate(flags.get(t), c, pod.spec, pod.podId);
						const s = loc.secret && secrets.get(`${pod.ns}/${loc.secret}`);
						if (loc.kind !== "secret")
							problem(where, `--${t} ${flags.get(t)} is not on a Secret volume`);
						else if (s && !/\$\(/.test(loc.key) && !s.keys.has(loc.key))
							problem(where, `--${t}: Secret ${loc.secret} has no key ${loc.key}`);
					}
				if (bin === "dynprof-agent") {
					const socket = flags.get("socket") ?? env.get("DYNPROF_AGENT_SOCKET") ?? facts.defaults.socket;
					const shm = flags.get("shm-dir") ?? env.get("DYNPROF_SHM_DIR") ?? facts.defaults.shmDir;
					agents.push({ pod, c, where, flags,
					    socket: locate(socket, c, pod.spec, pod.podId),
					    shm: locate(shm, c, pod.spec, pod.podId) });
				}
				if (bin === "dynprof-coordinator")
					coordinators.push({ pod, c, where, flags });
				continue;
			}
			if (env.has("DYNPROF_JOB") || env.has("DYNPROF_AGENT_SOCKET") || env.has("DYNPROF_SHM_DIR"))
				trainers.push({ pod, c, where, env,
				    socket: locate(env.get("DYNPROF_AGENT_SOCKET") ?? facts.defaults.socket, c, pod.spec, pod.podId),
				    shm: locate(env.get("DYNPROF_SHM_DIR") ?? facts.defaults.shmDir, c, pod.spec, pod.podId) });
		}
	}

	// Segments live in memory: a tmpfs hostPath or an emptyDir of medium Memory.
	for (const x of [...agents, ...trainers]) {
		if (x.shm.kind === "emptyDir" && x.shm.vol.emptyDir.medium !== "Memory")
			problem(x.where, "segment directory on an emptyDir without medium: Memory");
		if (x.shm.kind === "host" && !/^host:\/(run|dev\/shm)(\/|$)/.test(x.shm.key))
			problem(x.where, `segment directory ${x.shm.key} is not on a tmpfs (/run, /dev/shm)`);
		if (!["host", "emptyDir"].includes(x.shm.kind) || !["host", "emptyDir"].includes(x.socket.kind))
			problem(x.where, "socket and segment directory must be on a hostPath or emptyDir volume");
	}

	// No shared pid namespace: dynprof needs none (docs/containers.md), and
	// cluster policies forbid both.
	for (const x of new Set([...agents, ...trainers].map((y) => y.pod))) {
		const where = [...agents, ...trainers].find((y) => y.pod === x).where;
		if (x.spec.hostPID)
			problem(where, "hostPID: true: dynprof needs no shared pid namespace");
		if (x.spec.shareProcessNamespace)
			problem(where, "shareProcessNamespace: true: dynprof needs no shared pid namespace");
	}

	// Each trainer reaches an agent: the sidecar of its pod, else a DaemonSet agent
	// on its node, by the same socket and segment directory.
	for (const t of trainers) {
		const side = agents.filter((a) => a.pod === t.pod);
		const node = agents.filter((a) => a.pod.doc.kind === "DaemonSet");
		const cands = side.length ? side : node;
		if (!cands.length) {
			problem(t.where, "no agent serves this trainer (no sidecar, no DaemonSet)");
			continue;
		}
		for (const a of cands) {
			if (a.socket.key !== t.socket.key)
				problem(t.where, `rank socket ${t.socket.key} is not the agent's ${a.socket.key} (${a.where})`);
			if (a.shm.key !== t.shm.key)
				problem(t.where, `segment directory ${t.shm.key} is not the agent's ${a.shm.key} (${a.where})`);
		}
		if (!t.env.has("DYNPROF_JOB"))
			problem(t.where, "trainer without DYNPROF_JOB: every pod would be job 'default'");
		if (!["RANK", "RANK_ID", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"].some((n) => t.env.has(n)))
			problem(t.where, "trainer without a rank variable (RANK)");
	}

	// Agents reach a Service port that forwards to the coordinator's --listen port;
	// probes and the http Service port hit --http.
	const portOf = (hp) => Number(String(hp).split(":").pop());
	for (const co of coordinators) {
		const listen = portOf(co.flags.get("listen") ?? "127.0.0.1:7878");
		const http = portOf(co.flags.get("http") ?? "127.0.0.1:7879");
		const named = new Map((co.c.ports ?? []).map((p) => [p.name, p.containerPort]));
		const resolve = (p) => (typeof p === "string" ? named.get(p) : p);
		for (const probe of ["readinessProbe", "livenessProbe", "startupProbe"]) {
			const g = co.c[probe]?.httpGet;
			if (!g)
				continue;
			if (resolve(g.port) !== http)
				problem(co.where, `${probe} port ${g.port} is not the --http port ${http}`);
			if (g.path !== "/healthz")
				problem(co.where, `${probe} path ${g.path} is not /healthz`);
		}
		if (!co.c.readinessProbe || !co.c.livenessProbe)
			problem(co.where, "coordinator without readiness and liveness probes");
		co.listen = listen;
		co.http = http;
		co.resolve = resolve;
	}
	for (const a of agents) {
		const target = a.flags.get("coordinator");
		if (typeof target !== "string")
			continue;
		const m = target.match(/^([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?:(\d+)$/);
		if (!m) {
			problem(a.where, `--coordinator ${target} is not SERVICE.NAMESPACE.svc:PORT`);
			continue;
		}
		const svc = services.find((s) => s.doc.metadata.name === m[1] && s.ns === m[2]);
		if (!svc) {
			problem(a.where, `--coordinator ${target}: no Service ${m[1]} in namespace ${m[2]}`);
			continue;
		}
		const port = (svc.doc.spec.ports ?? []).find((p) => p.port === Number(m[4]));
		if (!port) {
			problem(a.where, `--coordinator ${target}: Service ${m[1]} has no port ${m[4]}`);
			continue;
		}
		const sel = svc.doc.spec.selector ?? {};
		const co = coordinators.find((x) => x.pod.ns === svc.ns &&
		    Object.entries(sel).every(([k, v]) =>
			(x.pod.doc.spec?.template?.metadata?.labels ?? {})[k] === v));
		if (!co) {
			problem(a.where, `--coordinator ${target}: Service ${m[1]} selects no coordinator`);
			continue;
		}
		if (co.resolve(port.targetPort ?? port.port) !== co.listen)
			problem(a.where, `--coordinator ${target}: Service port ${m[4]} does not reach the coordinator's --listen port ${co.listen}`);
	}

	// Agent tokens: every Secret key an agent reads holds the coordinator's value.
	const coordTok = new Set();
	for (const co of coordinators) {
		const f = co.flags.get("agent-token-file");
		if (typeof f !== "string")
			continue;
		const loc = locate(f, co.c, co.pod.spec, co.pod.podId);
		const s = secrets.get(`${co.pod.ns}/${loc.secret}`);
		if (s)
			coordTok.add(s.doc.stringData?.[loc.key] ?? s.doc.data?.[loc.key]);
	}
	for (const a of agents) {
		const f = a.flags.get("token-file");
		if (typeof f !== "string" || !coordTok.size)
			continue;
		const loc = locate(f, a.c, a.pod.spec, a.pod.podId);
		const s = secrets.get(`${a.pod.ns}/${loc.secret}`);
		const v = s && (s.doc.stringData?.[loc.key] ?? s.doc.data?.[loc.key]);
		if (s && !coordTok.has(v))
			problem(a.where, `agent token (Secret ${loc.secret} key ${loc.key}) differs from the coordinator's agent token`);
	}
	if (!agents.length || !coordinators.length || !trainers.length)
		problem("manifests", `expected agents, a coordinator and trainers; found ${agents.length}, ${coordinators.length}, ${trainers.length}`);
}

async function main() {
	const argv = process.argv.slice(2);
	let facts = null;
	const cfiles = {};
	const files = [];
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === "--facts")
			facts = JSON.parse(fs.readFileSync(argv[++i], "utf8"));
		else if (argv[i] === "--configmap-file") {
			const [k, f] = argv[++i].split("=");
			cfiles[k] = f;
		} else
			files.push(argv[i]);
	}
	if (!files.length) {
		console.error("usage: node validate.mjs [--facts F.json] [--configmap-file NAME/KEY=FILE] FILE.yaml...");
		process.exit(2);
	}
	loadTypes(path.join(modroot, "kubernetes-models"));
	loadTypes(path.join(modroot, "@kubernetes-models", "apimachinery"));
	if (types.size < 500)
		throw new Error(`only ${types.size} API types found under ${modroot}`);

	const all = [];
	for (const file of files) {
		const docs = parseAllDocuments(fs.readFileSync(file, "utf8"));
		let n = 0;
		for (const d of docs) {
			n++;
			const where = `${path.basename(file)}#${n}`;
			for (const e of [...d.errors, ...d.warnings])
				problem(where, `yaml: ${e.message}`);
			const doc = d.toJS();
			if (doc === null || doc === undefined)
				continue;
			if (await schemaCheck(doc, where))
				all.push({ doc, where });
		}
	}
	if (facts)
		consistency(all, facts, cfiles);
	for (const p of problems)
		console.log(p);
	console.log(`${all.length} documents in ${files.length} files, ${problems.length} problems`);
	process.exit(problems.length ? 1 : 0);
}

await main();
