// Starts Swagger UI on the server's own OpenAPI document. Nothing is
// loaded from elsewhere: the validator badge (validator.swagger.io) is off.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  displayRequestDuration: true,
  defaultModelsExpandDepth: 0,
  persistAuthorization: false,
});
