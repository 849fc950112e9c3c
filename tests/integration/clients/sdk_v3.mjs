// The AWS SDK for JavaScript v3 against the local AWS (tests/integration/test_sdk_clients.py runs it): S3 writes in
// each payload form the SDK sends (a string body, a stream body: aws-chunked with a trailing CRC32), a read back,
// a checksum that is not the body's, DynamoDB calls, and the same calls signed with a wrong secret. Prints one JSON
// object: each step's outcome ("ok" or the error's name) and the x-amz-content-sha256 forms the SDK sent.
import { Readable } from "node:stream";
import { S3Client, CreateBucketCommand, PutObjectCommand, GetObjectCommand } from "@aws-sdk/client-s3";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";

const [endpoint, bucket] = process.argv.slice(2);
const forms = new Set();
const outcomes = {};

function recorded(client) {
  client.middlewareStack.add(
    (next) => async (args) => {
      const form = args.request.headers["x-amz-content-sha256"];
      if (form) forms.add(/^[0-9a-f]{64}$/.test(form) ? "<sha256>" : form);
      return next(args);
    },
    { step: "finalizeRequest", priority: "low" },
  );
  return client;
}

const config = (secret) => ({
  endpoint,
  region: process.env.AWS_REGION,
  forcePathStyle: true,
  maxAttempts: 1,
  credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: secret },
});
const s3 = recorded(new S3Client(config(process.env.AWS_SECRET_ACCESS_KEY)));
const forged = new S3Client(config("not-the-secret"));
const ddb = new DynamoDBClient(config(process.env.AWS_SECRET_ACCESS_KEY));
const ddbForged = new DynamoDBClient(config("not-the-secret"));

async function step(name, call) {
  try {
    outcomes[name] = await call();
  } catch (error) {
    outcomes[name] = error.name;
  }
}

const data = "x".repeat(70000);
await step("s3.create-bucket", async () => (await s3.send(new CreateBucketCommand({ Bucket: bucket })), "ok"));
await step("s3.put-string", async () => (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "a", Body: "hello" })), "ok"));
await step("s3.put-stream", async () => {
  const Body = Readable.from([Buffer.from(data)]);
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "b", Body, ContentLength: data.length }));
  return "ok";
});
await step("s3.get-stream", async () => {
  const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "b" }));
  return (await answer.Body.transformToString()) === data ? "ok" : "different";
});
await step("s3.put-wrong-checksum", async () => (await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "c", Body: "hello", ChecksumCRC32: "AAAAAA==" })), "ok"));
await step("s3.put-forged", async () => (await forged.send(new PutObjectCommand({ Bucket: bucket, Key: "d", Body: "hello" })), "ok"));
await step("dynamodb.list-tables", async () => (await ddb.send(new ListTablesCommand({})), "ok"));
await step("dynamodb.list-tables-forged", async () => (await ddbForged.send(new ListTablesCommand({})), "ok"));
console.log(JSON.stringify({ outcomes, forms: [...forms].sort() }));
