// Expands pulumi-eks's own `Cluster` and `ManagedNodeGroup` (the vendored implementation the
// pulumi-eks provider runs at deploy time) under @pulumi/pulumi's mocks, with the inputs this
// project's Python program passes them, and prints every resource they register as JSON.
//
//   node bin/tests/pulumi_eks_expansion/runner.js <inputs.json>   (tsc keeps the layout below ../..)
//
// inputs.json: {"project", "stack", "region", "cluster": {"name", "urn", "inputs"},
//               "nodeGroups": [{"name", "inputs"}]}
// A resource reference is {"$resource": {"urn", "id"}}: the Cluster's URN stands for the Cluster
// constructed here; any other reference is read back (`get`) from its id.
// Output: {"resources": [{type, name, urn, parent, custom, dependencies, inputs}], "invokes": [...],
//          "errors": [message]}; the exit code is 0 even when the construction threw.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

import * as pulumi from "@pulumi/pulumi";

// The deploy host needs the AWS CLI v2 (pulumi-eks `dependencies.ts`, `assertCompatibleAWSCLIExists`,
// and the kubeconfig's `aws eks get-token`); stand in for it so that check runs as written.
function putAwsCliOnPath(): void {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "aws-cli-"));
    const aws = path.join(bin, "aws");
    fs.writeFileSync(aws, "#!/bin/sh\necho 'aws-cli/2.22.0 Python/3.12.6 Linux/6.1 exe/x86_64'\n", { mode: 0o755 });
    process.env.PATH = `${bin}${path.delimiter}${process.env.PATH ?? ""}`;
}

type Json = any;

interface Captured {
    type: string;
    name: string;
    urn: string;
    parent: string;
    custom: boolean;
    dependencies: string[];
    inputs: Json;
}

const ACCOUNT_ID = "123456789012";

function main(): void {
    const request = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
    const region: string = request.region;
    const resources: Captured[] = [];
    const invokes: Json[] = [];
    const errors: string[] = [];
    const fail = (error: unknown) => errors.push(error instanceof Error ? error.message : String(error));
    process.on("unhandledRejection", fail);
    process.on("uncaughtException", fail);

    putAwsCliOnPath();
    pulumi.runtime.setMocks(
        {
            call: (args) => {
                invokes.push({ token: args.token, inputs: args.inputs });
                try {
                    return answerInvoke(args.token, region);
                } catch (error) {
                    fail(error); // the SDK drops the message on its way back
                    throw error;
                }
            },
            newResource: (args) => ({
                id: args.id || `${args.name}-id`,
                state: resourceState(args.type, args.name, args.inputs, region, request.cluster.inputs.vpcId),
            }),
        },
        request.project,
        request.stack,
        true, // a preview: pulumi-eks skips its wait on the live API endpoint
    );
    captureRegistrations(resources);

    // Imported after the mocks are set, as a program would be run by the provider.
    const certThumbprint = require("../../vendor/pulumi-eks-4.3.0/nodejs/eks/cluster/cert-thumprint");
    // The OIDC provider's thumbprint is read over TLS from the issuer; no network at test time.
    certThumbprint.getIssuerCAThumbprint = (issuerUrl: pulumi.Input<string>) =>
        pulumi.output(issuerUrl).apply(() => "9e99a48a9960b14926bb7f3b02e22da2b0ab7280");
    // As the provider's `construct` does (pulumi-eks `nodejs/eks/cmd/provider/cluster.ts`, `nodegroup.ts`).
    const { Cluster } = require("../../vendor/pulumi-eks-4.3.0/nodejs/eks/cluster");
    const { ManagedNodeGroup } = require("../../vendor/pulumi-eks-4.3.0/nodejs/eks/nodes");

    let cluster: pulumi.Resource | undefined;
    try {
        cluster = new Cluster(request.cluster.name, revive(request.cluster.inputs, {}), {});
        const byUrn = { [request.cluster.urn]: cluster! };
        for (const group of request.nodeGroups) {
            new ManagedNodeGroup(group.name, revive(group.inputs, byUrn), {});
        }
    } catch (error) {
        fail(error);
    }

    // Exits once reported: after an error, the runtime would otherwise wait on what never resolves.
    settle(resources).then(() =>
        process.stdout.write(JSON.stringify({ resources, invokes, errors }) + "\n", () => process.exit(0)),
    );
}

/** Turns the Python side's markers back into what the provider's construct receives. */
function revive(value: Json, byUrn: Record<string, pulumi.Resource>): Json {
    if (Array.isArray(value)) {
        return value.map((item) => revive(item, byUrn));
    }
    if (value === null || typeof value !== "object") {
        return value;
    }
    if ("$resource" in value) {
        const { urn, id } = value.$resource;
        return byUrn[urn] ?? readBack(urn, id);
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v, byUrn)]));
}

/** A custom resource the program declared, read back by id as a rehydrated reference would be. */
function readBack(urn: string, id: string): pulumi.CustomResource {
    const [, , qualifiedType, name] = urn.split("::");
    const type = qualifiedType.split("$").pop()!;
    const [pkg, module, className] = type.split(":");
    if (pkg !== "aws") {
        throw new Error(`cannot read back a reference to ${type}`);
    }
    const aws = require("@pulumi/aws");
    return aws[module.split("/")[0]][className].get(name, id);
}

/** Records each registration with its parent and dependencies, which `Mocks` alone never sees. */
function captureRegistrations(resources: Captured[]): void {
    const monitor: any = pulumi.runtime.getMonitor();
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req: any, callback: (err: any, response: any) => void) => {
        const type = req.getType();
        const name = req.getName();
        const parent = req.getParent();
        return register(req, (err: any, response: any) => {
            if (!err) {
                resources.push({
                    type,
                    name,
                    urn: response.getUrn(),
                    parent,
                    custom: req.getCustom(),
                    dependencies: req.getDependenciesList(),
                    inputs: pulumi.runtime.deserializeProperties(req.getObject()),
                });
            }
            callback(err, response);
        });
    };
}

/** Resolves once no registration has been added for a while: outputs settle in chains of applies. */
async function settle(resources: Captured[]): Promise<void> {
    let seen = -1;
    while (seen !== resources.length) {
        seen = resources.length;
        await (pulumi.runtime as any).waitForRPCs?.();
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
}

/** Answers lookups in the shape of pulumi-aws's result types (`@pulumi/aws`, `Get*Result`). */
function answerInvoke(token: string, region: string): Json {
    switch (token) {
        case "aws:index/getPartition:getPartition":
            return { id: "aws", partition: "aws", dnsSuffix: "amazonaws.com", reverseDnsPrefix: "com.amazonaws" };
        case "aws:index/getRegion:getRegion":
            return {
                id: region,
                name: region,
                region,
                endpoint: `ec2.${region}.amazonaws.com`,
                description: region,
            };
        case "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                id: ACCOUNT_ID,
                accountId: ACCOUNT_ID,
                arn: `arn:aws:iam::${ACCOUNT_ID}:user/deployer`,
                userId: "AIDAEXAMPLE",
            };
        default:
            throw new Error(`unexpected lookup ${token}: answer it in runner.ts in the shape AWS returns`);
    }
}

/** What AWS reports back for the resources pulumi-eks reads outputs of. */
function resourceState(type: string, name: string, inputs: Json, region: string, vpcId: string): Json {
    const state = { ...inputs };
    switch (type) {
        case "aws:iam/role:Role":
            return { ...state, name: state.name ?? name, arn: `arn:aws:iam::${ACCOUNT_ID}:role/${name}` };
        case "aws:eks/cluster:Cluster": {
            const clusterName = inputs.name ?? name;
            return {
                ...state,
                name: clusterName,
                arn: `arn:aws:eks:${region}:${ACCOUNT_ID}:cluster/${clusterName}`,
                endpoint: `https://0123456789ABCDEF0123456789ABCDEF.gr7.${region}.eks.amazonaws.com`,
                certificateAuthority: { data: Buffer.from("certificate").toString("base64") },
                version: inputs.version,
                identities: [
                    { oidcs: [{ issuer: `https://oidc.eks.${region}.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF` }] },
                ],
                kubernetesNetworkConfig: {
                    ipFamily: "ipv4",
                    serviceIpv4Cidr: "172.20.0.0/16",
                    serviceIpv6Cidr: "",
                    elasticLoadBalancing: { enabled: false },
                },
                vpcConfig: {
                    ...inputs.vpcConfig,
                    clusterSecurityGroupId: "sg-eks-cluster",
                    vpcId,
                },
            };
        }
        case "aws:ec2/launchTemplate:LaunchTemplate":
            return { ...state, latestVersion: 1 };
        default:
            return state;
    }
}

main();
